"""A warm `ctx run` killed with SIGKILL (issue 32.1): the run became the compiled capture, which holds
the command's output in memory files the warm engine opened (JRN1, supervisor/run_journal.py).
While the command runs nothing under the state dir holds its secrets; once the capture is killed,
the engine journals what it held, redacted, and the next `ctx run` archives it and names its
handles, as for an in-process run killed outright (test_killed_run.py, test_live_journal.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

from capsule.supervisor import control_server
from tests.hostile.killing import kill_with_its_groups
from tests.hostile.test_killed_run import LINES, PRINT, REPO, TICKS, _journal, _wait
from tests.hostile.test_live_journal import GHP, SECRETS
from tests.hostile.test_secret_redaction import _holding


def _env(state, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    return {**env, "JACKIN_CTX_STATE_DIR": str(state), "JACKIN_CTX_DAEMON_IDLE": "60", **extra}


def _capsule(state, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capsule", *args], capture_output=True, env=_env(state), cwd=REPO,
                          timeout=120)


def _warm(state) -> None:
    """The first run starts the engine daemon (and is served in-process); wait until it answers."""
    _capsule(state, "ctx", "run", "--", "true")
    _wait(lambda: list(state.glob("d-*.sock")), what="the daemon's socket")
    control_server.wait_ready(next(state.glob("d-*.sock")), 120)


def test_a_warm_run_killed_with_sigkill_loses_nothing_it_had_captured(tmp_path):
    state, flag = tmp_path / "state", tmp_path / "printed"
    _warm(state)
    script = (f"{PRINT}; echo \"error: linker failed, token $T\" >&2; touch {flag}; {TICKS}")
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "run", "--", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            env=_env(state, JACKIN_CTX_STREAM_AFTER="120", T=GHP))
    _wait(flag.exists, what="the command to print its output")
    time.sleep(0.5)                                 # the capture has read what the command printed
    with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
        assert f.read().split(b"\0")[0].endswith(b".capture")      # the run is the compiled capture now
    assert _journal(state) == {} and _holding(state, SECRETS) == []   # nothing persisted while it runs
    out, err = kill_with_its_groups(proc)          # the command leads its own group (no terminal)
    assert proc.returncode == -signal.SIGKILL and out == b"" and err == b""   # the output was held

    _wait(lambda: _journal(state).get("stdout", 0) >= len(LINES) and _journal(state).get("stderr", 0) > 0,
          what="the engine to journal what the killed run held")
    assert _holding(state, SECRETS) == []
    waiting = json.loads(_capsule(state, "ctx", "doctor", "--json").stdout)["state"]["interrupted"]
    assert [w["bytes"]["stdout"] >= len(LINES) for w in waiting] == [True]

    nxt = _capsule(state, "ctx", "run", "--", "echo", "next")
    assert nxt.returncode == 0 and nxt.stdout == b"next\n"
    notes = nxt.stderr.decode().strip().splitlines()
    assert len(notes) == 2 and all("was killed before its output was shown" in n for n in notes), notes
    handles = dict(re.search(r"bytes of (\w+) it had printed are kept: capsule ctx expand '<<ccr:([0-9a-f]{24})>>'",
                             n).groups() for n in notes)
    stdout = _capsule(state, "ctx", "expand", handles["stdout"])
    assert stdout.returncode == 0 and stdout.stdout.startswith(LINES)      # byte-exact
    stderr = _capsule(state, "ctx", "expand", handles["stderr"]).stdout
    assert stderr.startswith(b"error: linker failed, token ") and GHP.encode() not in stderr
    assert _journal(state) == {}


def test_a_warm_run_that_shows_its_output_leaves_no_journal(tmp_path):
    state = tmp_path / "state"
    _warm(state)
    got = _capsule(state, "ctx", "run", "--", "sh", "-c", PRINT)
    assert got.returncode == 0 and len(got.stdout) < len(LINES)          # served by the warm engine
    time.sleep(1.0)                                 # the engine saw the capture end with its files emptied
    assert _journal(state) == {}
    assert control_server.status(next(state.glob("d-*.sock")))["served"] == 1
