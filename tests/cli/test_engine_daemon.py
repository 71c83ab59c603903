"""The engine daemon of `capsule ctx run` (cli/warm.py, supervisor/daemon.py), run for real: the
first run starts it, the next ones reuse it (one daemon, one engine), it exits after its idle time,
its socket is owner-only, a ledger reader right after a run sees that run's row, other settings get
another daemon, and JACKIN_CTX_NO_DAEMON=1 keeps every run in-process."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capsule.supervisor import control_server

LINES = "".join(f"step {i}: processing item {i} of the batch\n" for i in range(1, 2001))


@pytest.fixture
def run(state_dir, tmp_path):
    """capsule ctx run -- CMD with the daemon on (the suite's default is off: tests/conftest.py)."""
    (tmp_path / "talk").write_text("#!/bin/sh\nseq 1 2000 | sed 's/.*/step &: processing item & of the batch/'\n")
    (tmp_path / "talk").chmod(0o755)

    def call(*argv: str, **env: str) -> subprocess.CompletedProcess:
        full = {k: v for k, v in os.environ.items() if k != "JACKIN_CTX_NO_DAEMON"}
        full.update({"JACKIN_CTX_STATE_DIR": str(state_dir), "JACKIN_CTX_DAEMON_IDLE": "30", **env})
        return subprocess.run([sys.executable, "-m", "capsule", "ctx", "run", "--", *argv], capture_output=True,
                              env=full, timeout=120, cwd=tmp_path)

    call.talk = str(tmp_path / "talk")
    return call


def _socket(state_dir: Path, **env: str) -> Path:
    full = {k: v for k, v in os.environ.items() if k != "JACKIN_CTX_NO_DAEMON"}
    full.update({"JACKIN_CTX_STATE_DIR": str(state_dir), "JACKIN_CTX_DAEMON_IDLE": "30", **env})
    got = subprocess.run([sys.executable, "-c", "from capsule.ground import paths; print(paths.daemon_socket())"],
                         capture_output=True, env=full, check=True)
    return Path(got.stdout.decode().strip())


def test_the_first_run_starts_the_daemon_and_the_next_runs_reuse_it(run, state_dir):
    first = run(run.talk)
    assert first.returncode == 0 and len(first.stdout) < len(LINES)
    sock = _socket(state_dir)
    control_server.wait_ready(sock, 60)
    pid = control_server.status(sock)["pid"]
    for _ in range(3):
        again = run(run.talk)
        assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, first.stderr)
    info = control_server.status(sock)
    assert info["pid"] == pid and info["served"] == 3 and info["daemon"] is True
    assert len(list(state_dir.glob("d-*.sock"))) == 1


def test_the_socket_and_the_capture_are_owner_only(run, state_dir):
    run(run.talk)
    sock = _socket(state_dir)
    control_server.wait_ready(sock, 60)
    mode = stat.S_IMODE(os.stat(sock).st_mode)
    assert mode == 0o600 and os.stat(sock).st_uid == os.geteuid()
    assert stat.S_IMODE(os.stat(f"{sock}.lock").st_mode) == 0o600
    capture = sock.with_suffix(".capture")           # the compiled capture the daemon built beside it
    assert stat.S_IMODE(os.stat(capture).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(f"{capture}.c").st_mode) == 0o600


def test_the_daemon_exits_after_its_idle_time(run, state_dir):
    run(run.talk, JACKIN_CTX_DAEMON_IDLE="2")
    sock = _socket(state_dir, JACKIN_CTX_DAEMON_IDLE="2")
    control_server.wait_ready(sock, 60)
    pid = control_server.status(sock)["pid"]
    served = run(run.talk, JACKIN_CTX_DAEMON_IDLE="2")
    assert served.returncode == 0 and control_server.status(sock)["served"] == 1
    deadline = time.monotonic() + 30
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not sock.exists()
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_ledger_reader_right_after_a_run_sees_its_row(run, state_dir):
    run(run.talk)
    control_server.wait_ready(_socket(state_dir), 60)
    for n in range(2, 5):
        assert run(run.talk).returncode == 0
        gain = subprocess.run([sys.executable, "-m", "capsule", "ctx", "gain", "--json"], capture_output=True,
                              env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}, check=True)
        import json

        assert json.loads(gain.stdout)["total"]["emissions"] == n, gain.stdout[:300]


def test_other_settings_get_their_own_daemon(run, state_dir):
    run(run.talk)
    plain = _socket(state_dir)
    measured = _socket(state_dir, JACKIN_CTX_MEASURE_ONLY="1")
    assert plain != measured
    control_server.wait_ready(plain, 60)
    got = run(run.talk, JACKIN_CTX_MEASURE_ONLY="1")       # its daemon is not up yet: in-process, untouched
    assert got.stdout.decode() == LINES
    control_server.wait_ready(measured, 60)
    got = run(run.talk, JACKIN_CTX_MEASURE_ONLY="1")
    assert got.stdout.decode() == LINES and control_server.status(measured)["served"] == 1
    assert control_server.status(plain)["served"] == 0


def test_no_daemon_keeps_every_run_in_process(run, state_dir):
    for _ in range(2):
        got = run(run.talk, JACKIN_CTX_NO_DAEMON="1")
        assert got.returncode == 0 and len(got.stdout) < len(LINES)
    time.sleep(1.0)
    assert not list(state_dir.glob("d-*.sock"))


PROBE = """
import json, os, re, sys
sys.argv = ["capsule", "ctx", "run", "--", sys.argv[1]]
execv = os.execv


def logs(module):   # a module that logs holds its logging.getLogger(...) from an import at its top
    with open(module.__file__, encoding="utf-8") as f:
        return re.search(r"^(import logging|from logging )", f.read(), re.M) is not None


def seen(path, args):   # what the interpreter loaded by the time it becomes the compiled capture
    print(json.dumps([os.path.basename(path)] + [m for m in ("capsule.engine", "capsule.observe", "tiktoken",
          "logging", "dataclasses", "anyio", "capsule.store.redact") if m in sys.modules]
          + [f"{name} logs" for name, m in sorted(sys.modules.items()) if name.startswith("capsule") and logs(m)]),
          file=sys.stderr, flush=True)
    execv(path, args)


os.execv = seen
from capsule.cli.main import main
main()
print("still in Python after the run", file=sys.stderr)
"""


def test_a_run_through_the_daemon_loads_no_engine_and_becomes_the_compiled_capture(run, state_dir):
    """The client's side of a warm run: find the socket, exec the compiled capture (the design's
    <= 60 ms of CPU); the capture runs the command and makes the one request. The client loads only
    modules that do not log (and so no logging: ~6 ms of CPU)."""
    run(run.talk)
    sock = _socket(state_dir)
    control_server.wait_ready(sock, 60)
    env = {k: v for k, v in os.environ.items() if k != "JACKIN_CTX_NO_DAEMON"}
    env.update(JACKIN_CTX_STATE_DIR=str(state_dir), JACKIN_CTX_DAEMON_IDLE="30")
    got = subprocess.run([sys.executable, "-c", PROBE, run.talk], capture_output=True, env=env, timeout=60)
    assert got.returncode == 0 and len(got.stdout) < len(LINES)
    assert got.stderr.decode().strip() == f'["{sock.with_suffix(".capture").name}"]'
    assert control_server.status(sock)["served"] == 1


def test_a_file_read_after_a_command_is_shaped_not_left_to_its_deadline(run, state_dir, tmp_path):
    """A file view reads the session's recent commands from the ledger (its cues) while the rows of
    the command before it are still owed by the same engine: the read must not wait on its own
    engine's pending lock (that wait outlived the capture's deadline, and the file passed raw)."""
    source = tmp_path / "module.py"
    body = "".join(f"    step_{k} = prepare(request, {k})\n" for k in range(8))
    source.write_text("".join(f"def handler_{i}(request):\n{body}    return respond(request, {i})\n\n\n"
                              for i in range(200)))
    run(run.talk)                                       # starts the daemon
    control_server.wait_ready(_socket(state_dir), 60)
    for _ in range(2):
        assert run(run.talk).returncode == 0            # a row owed right before the read
        t0 = time.monotonic()
        got = run("cat", str(source))
        took = time.monotonic() - t0
        assert got.returncode == 0 and len(got.stdout) < source.stat().st_size // 2, got.stdout[:300]
        assert took < 1.5, f"{took:.2f} s: the read waited for its deadline"
