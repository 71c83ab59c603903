"""Logs fold by template, and the line that breaks its template stays (issue 25, rule 4): an access
log of the real `python -m http.server` (made at test time by real requests on 127.0.0.1) with 300
requests for `/orders/N` and one for `/admin/export.csv` shows the orders as a count line with what
varied, and the export request as written; the log's masks read both targets as one `<target>`."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.ground.types import Observation


def access_log(root, tmp_path) -> str:
    (root / "orders").mkdir(parents=True)
    for i in range(1, 301):
        (root / "orders" / str(i)).write_text("{}")
    (root / "admin").mkdir()
    (root / "admin" / "export.csv").write_text("id\n")
    log = tmp_path / "access.log"
    with open(log, "w") as err:
        server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
                                  cwd=root, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            port = int(server.stdout.readline().split(" port ")[1].split()[0])
            for k in range(300):
                i = k * 7 % 300 + 1           # every order once, not in order: the range says what the ends do not
                urllib.request.urlopen(f"http://127.0.0.1:{port}/orders/{i}").read()
                if k == 173:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/export.csv").read()
            time.sleep(0.2)
        finally:
            server.terminate()
            server.wait()
    return log.read_text()


def test_an_access_log_keeps_the_request_that_differs(tmp_path):
    raw = access_log(tmp_path / "site", tmp_path)
    odd = next(ln for ln in raw.splitlines() if "/admin/export.csv" in ln)
    assert len([ln for ln in raw.splitlines() if "GET /orders/" in ln]) == 300
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(
        Observation(raw.encode(), command="cat access.log", exit_code=0)).data.decode()
    assert odd in out.splitlines(), out
    assert "1…300" in out, out             # what varied among the folded requests
    assert tokens.count(out) < tokens.count(raw) // 10, out
