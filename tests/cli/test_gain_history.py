"""`capsule ctx gain --by day|week|month|project|session`, `--json`, `--csv`, colour on a terminal only
(issue 33): the ledger records the project (older stores gain the column), the fleet copies it."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess
import sys
from datetime import datetime

import apsw
import pytest

from capsule.measure.ledger import Ledger, Row

CLI = [sys.executable, "-m", "capsule"]
OLD_SCHEMA = """CREATE TABLE emissions(id INTEGER PRIMARY KEY, ts REAL NOT NULL, scope TEXT, command TEXT, family TEXT,
  transform TEXT, stream TEXT, mode TEXT, applied INTEGER NOT NULL, raw_tokens INTEGER NOT NULL,
  emitted_tokens INTEGER NOT NULL, raw_bytes INTEGER NOT NULL, emitted_bytes INTEGER NOT NULL, exit_code INTEGER,
  handle TEXT, duration_ms REAL, token_label TEXT NOT NULL, manifest TEXT NOT NULL, reports TEXT NOT NULL)"""


def _row(ts: float, raw: int, emitted: int, project: str | None, scope: str = "s1") -> Row:
    return Row(scope=scope, command="git log", family="git", transform="git_log", stream="stdout", mode="standard",
               applied=True, raw_tokens=raw, emitted_tokens=emitted, raw_bytes=raw * 4, emitted_bytes=emitted * 4,
               exit_code=0, handle=None, duration_ms=1.0, token_label="cl100k_base", project=project, ts=ts)


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A ledger an older capsule wrote (no project column, one row), then rows on three days."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    conn = apsw.Connection(str(state / "ledger.db"))
    conn.execute(OLD_SCHEMA)
    conn.execute("INSERT INTO emissions(ts, scope, command, family, transform, stream, mode, applied, raw_tokens, "
                 "emitted_tokens, raw_bytes, emitted_bytes, token_label, manifest, reports) VALUES "
                 "(?, 'old', 'ls', 'listing', 'ls', 'stdout', 'standard', 1, 100, 40, 400, 160, 'cl100k_base', '[]', '[]')",
                 (datetime(2026, 11, 2, 12).timestamp(),))
    conn.close()
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(state))
    ledger = Ledger(state / "ledger.db")          # opening migrates: the project column is added
    for day, raw, emitted, project in ((30, 1000, 200, "/src/a"), (30, 500, 500, "/src/b"), (1, 300, 100, "/src/a")):
        month = 11 if day == 30 else 12
        ledger.record(_row(datetime(2026, month, day, 10).timestamp(), raw, emitted, project, scope=f"s{day}"))
    ledger.close()
    return state


def gain(*args, env=None, **kw):
    proc = subprocess.run([*CLI, "ctx", "gain", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, **kw)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_by_day_week_month_project_session_add_up_to_the_total(state):
    total = json.loads(gain("--json"))["total"]
    for by, keys in (("day", ["2026-11-02", "2026-11-30", "2026-12-01"]), ("week", ["2026-W45", "2026-W49"]),
                     ("month", ["2026-11", "2026-12"]), ("project", ["(unknown)", "/src/a", "/src/b"]),
                     ("session", ["old", "s1", "s30"])):
        h = json.loads(gain("--by", by, "--json"))
        assert [g["key"] for g in h["rows"]] == keys, by
        assert h["total"]["saved_tokens"] == total["saved_tokens"] == 60 + 800 + 0 + 200
        assert sum(g["saved_tokens"] for g in h["rows"]) == total["saved_tokens"]
    a = next(g for g in json.loads(gain("--by", "project", "--json"))["rows"] if g["key"] == "/src/a")
    assert (a["raw_tokens"], a["saved_tokens"], a["saved_pct"]) == (1300, 1000, 76.9)
    text = gain("--by", "day")
    assert "saved tok" in text and "2026-11-30" in text and "    800" in text and "53.3%" in text
    rows = list(csv.reader(io.StringIO(gain("--by", "month", "--csv"))))
    assert rows[0][:5] == ["month", "emissions", "raw_tokens", "emitted_tokens", "saved_tokens"]
    assert rows[1][:5] == ["2026-11", "3", "1600", "740", "860"] and rows[-1][0] == "TOTAL"
    assert "\x1b[" not in text                            # a pipe: no colour


def _tty(args, env):
    """Run `capsule ctx gain ARGS` on a pseudo-terminal and return what it printed."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "capsule", "ctx", "gain", *args], env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out.decode()


def test_colour_on_a_terminal_and_never_with_no_color(state):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm"
    assert "\x1b[1m" in _tty(["--by", "day"], env)
    assert "\x1b[" not in _tty(["--by", "day"], {**env, "NO_COLOR": "1"})


def test_a_command_records_its_repository_and_the_fleet_copies_it(tmp_path):
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(tmp_path / "state")}
    subprocess.run([*CLI, "ctx", "run", "--", "seq", "1", "3000"], cwd=repo / "sub", env=env, check=True,
                   capture_output=True)
    h = json.loads(gain("--by", "project", "--json", env=env))
    assert [g["key"] for g in h["rows"]] == [str(repo)]
    db = tmp_path / "fleet.db"
    subprocess.run([*CLI, "fleet", "sync", "--dsn", f"sqlite:///{db}", "--state", str(tmp_path / "state")],
                   env=env, check=True, capture_output=True, timeout=120)
    conn = apsw.Connection(str(db))
    assert [r[0] for r in conn.execute("SELECT project FROM emissions")] == [str(repo)]
