"""Shared fixtures: an isolated state directory and a way to run the real `capsule` CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# `capsule ctx run` in the suite uses its in-process engine, as it did before the engine daemon
# (cli/warm.py): one daemon per test's state dir would cost each ~1 s of CPU to warm and outlive the
# test. The daemon path has its own tests (tests/cli/test_engine_daemon.py, the conformance test's
# "ctx-daemon"), which clear this; a daemon they start exits when idle.
os.environ.setdefault("JACKIN_CTX_NO_DAEMON", "1")

# Tests of signal deaths (a command killed by SIGHUP is 128+1) need the default disposition in every
# process they start. A parent that ignores a signal passes that to every child through exec: `nohup`
# ignores SIGHUP, and a non-interactive shell's `cmd &` ignores SIGINT and SIGQUIT, so `kill -2 $$`
# would do nothing. A handled signal goes back to the default in the child at exec.
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
signal.signal(signal.SIGINT, signal.default_int_handler)     # Ctrl-C still stops pytest
os.environ.setdefault("JACKIN_CTX_DAEMON_IDLE", "30")


@pytest.fixture
def state_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(d))
    for name in ("JACKIN_CTX_DISABLE", "JACKIN_CTX_MEASURE_ONLY", "JACKIN_CTX_MODE", "JACKIN_CTX_FAULT_INJECT",
                 "JACKIN_CTX_RETENTION_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    return d


@pytest.fixture
def capsule(state_dir):
    """Run the installed CLI as a user would: capsule(*args, input=b"", env={...})."""

    def run(*args: str, input: bytes | None = None, env: dict | None = None, timeout: float = 120):
        full_env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), **(env or {})}
        return subprocess.run([sys.executable, "-m", "capsule", *args], input=input, capture_output=True,
                              env=full_env, timeout=timeout, cwd=REPO)

    return run
