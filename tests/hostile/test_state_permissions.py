"""Everything under the state dir is owner-only whatever the umask (issue 24): 0700 directories,
0600 files (SQLite stores with their WAL/SHM, a killed run's journal, caches, proxy.json); a store
left group/world-readable by an older capsule is tightened when it is opened; doctor says when the
state dir itself can be read by others."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import httpx2

from capsule.proxy.app import Settings
from capsule.proxy.proxy_server import ProxyServer
from tests.hostile.killing import kill_with_its_groups

LINES = "".join(f"line {i} of a long listing\n" for i in range(3000)).encode()


def _run(state_dir, *args, input=None, env=None, umask=0o000, **kw):
    full = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), **(env or {})}
    return subprocess.run([sys.executable, "-m", "capsule", *args], input=input, capture_output=True,
                          env=full, timeout=120, preexec_fn=lambda: os.umask(umask), **kw)


def _loose(root) -> list[str]:
    """Every path under root (root included) that others could read, write or traverse."""
    bad = []
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            continue
        if st.st_mode & 0o077:
            bad.append(f"{path.relative_to(root.parent)} {stat.filemode(st.st_mode)}")
    return bad


def _transcript(home):
    d = home / "projects" / "-w"
    d.mkdir(parents=True)
    entry = {"type": "assistant", "sessionId": "s-1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w",
             "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "role": "assistant",
                         "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                         "usage": {"input_tokens": 10, "output_tokens": 5}}}
    (d / "s-1.jsonl").write_text(json.dumps(entry) + "\n")


def test_everything_capsule_writes_is_owner_only_under_umask_0(tmp_path):
    state = tmp_path / "state"            # created by capsule itself
    assert _run(state, "ctx", "pipe", "--cmd", "ls -l", input=LINES).returncode == 0
    # A killed run's journal (its engine writes it once the run is gone), the run under umask 0 too.
    flag = tmp_path / "printed"
    live = subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "run", "--", "sh", "-c",
                             f"seq 1 3000; touch {flag}; sleep 30"],
                            env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=lambda: os.umask(0))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not flag.exists():
        time.sleep(0.05)
    time.sleep(0.5)                       # the capture has read it
    kill_with_its_groups(live)
    journal = state / "journal"
    while time.monotonic() < deadline + 20 and not list(journal.glob("*.stdout")):
        time.sleep(0.05)
    assert list(journal.glob("*.stdout")), "no journal of the killed run"
    during = _loose(state)
    home = tmp_path / "claude"
    _transcript(home)
    assert _run(state, "ctx", "usage", "--json", env={"CLAUDE_CONFIG_DIR": str(home)}).returncode == 0
    # The proxy door in this process, also under umask 0: proxy.json while it runs, proxy.db and usage.db.
    old = os.umask(0)
    try:
        proxy = ProxyServer(Settings(state_dir=state, anthropic_upstream="http://127.0.0.1:9")).start()
        during += _loose(state)
        body = {"model": "m", "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": LINES.decode()}]}]}
        httpx2.post(proxy.url + "/v1/messages", json=body, timeout=60)
        proxy.stop()
    finally:
        os.umask(old)
    assert (state / "archive.db").exists() and (state / "ledger.db").exists() and (state / "usage.db").exists()
    assert (state / "proxy.db").exists()
    assert during == [] and _loose(state) == [], during + _loose(state)


def test_an_old_world_readable_store_is_tightened_on_open(tmp_path):
    state = tmp_path / "state"
    assert _run(state, "ctx", "pipe", "--cmd", "ls -l", input=LINES).returncode == 0
    for p in state.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    state.chmod(0o700)
    assert _run(state, "ctx", "pipe", "--cmd", "ls -la", input=LINES + b"x\n").returncode == 0
    assert _run(state, "ctx", "gain").returncode == 0          # waits for the detached ledger writer
    loose = [p for p in _loose(state) if ".db" in p or "journal" in p]
    assert loose == []


def test_doctor_reports_a_state_dir_others_can_read(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    proc = _run(state, "ctx", "doctor", "--json")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    report = json.loads(proc.stdout)
    assert report["state"]["permissions"]["problems"], report["state"]
    text = _run(state, "ctx", "doctor").stdout.decode()
    assert "others can read" in text and "chmod 700" in text, text
    state.chmod(0o700)
    report = json.loads(_run(state, "ctx", "doctor", "--json").stdout)
    assert report["state"]["permissions"]["problems"] == []
