"""The warm-up rehearsal's scratch stores live under the state dir, so a supervisor or daemon killed
while rehearsing leaves nothing in /tmp; the next rehearsal on that state dir clears what it left."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from capsule.engine import Engine
from capsule.supervisor.control_server import REHEARSALS, EngineServer


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _in_tmp() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(("capsule-warm-", "rehearsal-"))}


def test_a_killed_rehearsal_is_cleared_and_none_goes_to_tmp(state_dir):
    left = state_dir / REHEARSALS / str(_dead_pid()) / "rehearsal-killed"
    left.mkdir(parents=True)
    (left / "ledger.db").write_bytes(b"x" * 4096)
    before = _in_tmp()
    engine = Engine(state_dir)
    try:
        server = EngineServer(state_dir / "engine.sock", engine)
        anyio.run(server.rehearse)
    finally:
        engine.close()
    assert not left.parent.exists(), "a dead process's scratch stores stay"
    mine = state_dir / REHEARSALS / str(os.getpid())
    assert mine.is_dir() and not any(mine.iterdir()), "the rehearsal's own scratch is not cleared after it"
    assert oct(mine.stat().st_mode & 0o777) == oct(0o700)
    assert _in_tmp() <= before, "a rehearsal wrote its scratch stores to the temp dir"


def test_a_live_process_scratch_is_left_alone(state_dir):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = state_dir / REHEARSALS / str(other.pid) / "rehearsal-live"
        theirs.mkdir(parents=True)
        engine = Engine(state_dir)
        try:
            anyio.run(EngineServer(state_dir / "engine.sock", engine).rehearse)
        finally:
            engine.close()
        assert theirs.is_dir()
    finally:
        other.kill()
        other.wait()
