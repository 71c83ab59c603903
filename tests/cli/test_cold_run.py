"""A cold `capsule ctx run` (no warm engine: its own, served by a child, cli/own_engine.py) logs only
to the state dir: a run that logs nothing writes no log file and nothing to the user's streams, a run
that does log writes its record to the log file only; the run's pid is the capture, and the child
that served it is gone once its rows are written."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from capsule.measure.ledger import Ledger

RAW = "".join(f"{i}\n" for i in range(1, 3001)).encode()


def _run(state_dir, *argv, **env) -> subprocess.CompletedProcess:
    full = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), "JACKIN_CTX_NO_DAEMON": "1", **env}
    return subprocess.run([sys.executable, "-m", "capsule", "ctx", "run", "--", *argv], capture_output=True,
                          env=full, timeout=60)


def _eventually(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_run_that_logs_nothing_writes_no_log(state_dir):
    proc = _run(state_dir, "seq", "1", "3000")
    assert proc.returncode == 0 and proc.stderr == b""
    assert len(proc.stdout) < len(RAW) and b"capsule ctx expand" in proc.stdout      # it was compressed
    rows = Ledger(state_dir / "ledger.db").rows()         # waits for the child that writes the row
    assert [r["command"] for r in rows] == ["seq 1 3000"]
    assert not (state_dir / "capsule.log").exists()


def test_a_run_that_logs_writes_the_record_to_the_log_file_only(state_dir):
    proc = _run(state_dir, "seq", "1", "3000", JACKIN_CTX_FAULT_INJECT="*")
    assert proc.returncode == 0 and proc.stdout == RAW and proc.stderr == b""    # fail open: the whole raw output
    log = state_dir / "capsule.log"
    _eventually(lambda: log.exists() and "injected fault" in log.read_text(), "the engine's record in the log")


def test_the_run_is_the_capture_and_its_engine_a_child_that_goes(state_dir, tmp_path):
    flag = tmp_path / "started"
    full = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), "JACKIN_CTX_NO_DAEMON": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "run", "--", "sh", "-c",
                             f"touch {flag}; sleep 1; seq 1 3000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=full)
    _eventually(flag.exists, "the command to start")
    with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    assert any(a.endswith((b"run-capture.py", b".capture")) for a in argv[:3]), argv      # the run execs the capture
    children = [int(c) for t in os.listdir(f"/proc/{proc.pid}/task")
                for c in open(f"/proc/{proc.pid}/task/{t}/children").read().split()]
    servers = [c for c in children if os.readlink(f"/proc/{c}/fd/1") == os.devnull]
    assert len(servers) == 1, children                   # the engine's child: it never writes to the agent's view
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"capsule ctx expand" in out and err == b""
    _eventually(lambda: _gone(servers[0]), "the engine's child to exit")


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"     # exited; its new parent reaps it
    except FileNotFoundError:
        return True
