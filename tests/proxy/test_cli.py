"""`capsule proxy serve` as a user runs it, and what `capsule ctx doctor` says about the proxy."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import httpx2

from capsule.cli import doctor
from recording import Canned


def _serve(state_dir, *args):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    return subprocess.Popen([sys.executable, "-m", "capsule", "proxy", "serve", *args], env=env,
                            stderr=subprocess.PIPE, text=True)


def test_serve_forwards_reports_in_doctor_and_stops_cleanly(state_dir, capsule):
    up = Canned(200, [("content-type", "application/json")], [b'{"ok": true}'])
    proc = _serve(state_dir, "--port", "0", "--anthropic-upstream", up.url + "/", "--openai-upstream",
                  "https://user:pw@llm.example/v1?key=secret")
    try:
        url = proc.stderr.readline().split()[3]
        assert url.startswith("http://127.0.0.1:")
        r = httpx2.post(url + "/v1/messages", content=b"{}", headers={"x-api-key": "sk-secret-1"})
        assert r.status_code == 200 and r.content == b'{"ok": true}' and up.seen[-1][2]["x-api-key"] == "sk-secret-1"
        saved = json.loads((state_dir / "proxy.json").read_text())
        assert saved["url"] == url and saved["openai_upstream"] == "https://llm.example/v1"   # no user:pw, no key
        report = json.loads(capsule("ctx", "doctor", "--json").stdout)
        assert report["proxy"]["state"] == "running" and report["proxy"]["url"] == url
        assert "sk-secret-1" not in json.dumps(report)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == -signal.SIGTERM   # stopped by the signal, after its cleanup
        up.close()
    assert not (state_dir / "proxy.json").exists()
    assert json.loads(capsule("ctx", "doctor", "--json").stdout)["proxy"]["state"] == "not running"


def test_bad_usage_exits_2_with_the_reason(state_dir, capsule):
    r = capsule("proxy", "serve", "--anthropic-upstream", "api.anthropic.com")
    assert r.returncode == 2 and b"expected an http(s) URL" in r.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        r = capsule("proxy", "serve", "--port", str(busy.getsockname()[1]))
    assert r.returncode == 2 and b"cannot listen on 127.0.0.1" in r.stderr
    r = capsule("proxy", "serve", "--port", "0", env={"JACKIN_CTX_NO_PROXY": "1"})
    assert r.returncode == 2 and b"JACKIN_CTX_NO_PROXY" in r.stderr


def test_doctor_says_why_the_supervisors_proxy_is_not_running(state_dir):
    report = doctor.collect()
    assert report["proxy"] == {"state": "not running"}
    # What the supervisor's STATUS carries when its proxy could not start (supervisor/core.py).
    report["proxy"] = {"state": "failed", "reason": "could not start: [Errno 98] Address already in use"}
    assert "proxy        failed: could not start: [Errno 98] Address already in use" in doctor.render(report)


def test_a_workspace_that_is_not_a_directory_exits_2(state_dir, capsule, tmp_path):
    r = capsule("proxy", "serve", "--port", "0", "--workspace", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and b"--workspace" in r.stderr and b"not a directory" in r.stderr
