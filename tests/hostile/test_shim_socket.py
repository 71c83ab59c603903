"""A hostile engine socket (issue 31): whoever controls the supervisor's socket must not be able to
stall the agent's call, lose its output or make the capture write its own memory. Each case runs the
compiled capture and the Python fallback against a real Unix socket server written here; the agent
must get the command's own bytes and exit status. And the real command sees the argv[0] its caller
used (`sed`, not `/usr/bin/sed`), except a Python, which finds its venv by it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from capsule import shims
from tests.fakes import unix_socket

# 3000 lines on stdout (~100 KiB), two on stderr, exit 7: what the agent must see whole
TALK = ("#!/bin/sh\ni=1; while [ $i -le 3000 ]; do echo \"out line $i of a long listing\"; i=$((i+1)); done\n"
        "echo 'err line 1' >&2; echo 'err line 2' >&2\nexit 7\n")
AGENT = {"JACKIN_CTX_AGENT": "claude", "CLAUDECODE": "1"}
WRAP = 1 << 64


@pytest.fixture(scope="module")
def talk_dir(tmp_path_factory):
    real = tmp_path_factory.mktemp("real")
    (real / "talk").write_text(TALK)
    (real / "talk").chmod(0o755)
    (real / "big").write_text("#!/bin/sh\nseq 1 300000\n")      # ~2 MB: many socket buffers
    (real / "big").chmod(0o755)
    return real


@pytest.fixture(scope="module", params=["compiled", "python"])
def kind(request, tmp_path_factory):
    """The shim directory of one implementation, installed once ($JACKIN_CTX_SOCKET names each test's socket)."""
    d = tmp_path_factory.mktemp(f"shims-{request.param}")
    shims.install(d, names=["talk", "big", "sed", "python3"], socket=str(d / "unused.sock"),
                  compiled=request.param == "compiled")
    if request.param == "compiled":
        assert (d / shims.CAPTURE).is_file(), "the compiled capture did not build"
    return d


def _call(shim_dir: Path, real_dir: Path, script: str, sock: Path, timeout: float = 60, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JACKIN_CTX_", "CLAUDECODE", "CODEX_"))}
    env.update(PATH=f"{shim_dir}:{real_dir}:/usr/bin:/bin", JACKIN_CTX_SOCKET=str(sock), **AGENT, **extra)
    return subprocess.run(["bash", "-c", f". {shim_dir / shims.ENV_FILE}\n{script}", "agent-call"], env=env,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _raw(real_dir: Path, tool: str = "talk") -> subprocess.CompletedProcess:
    return subprocess.run([str(real_dir / tool)], capture_output=True)


def _answering(path: Path, reply_for):
    """A supervisor that reads each request whole and answers reply_for(request)."""
    seen: list[bytes] = []

    def handle(conn):
        with conn:
            req = unix_socket.request(conn)
            seen.append(req)
            try:
                conn.sendall(reply_for(req))
            except OSError:
                pass

    return unix_socket.serve(path, handle), seen


def _body(req: bytes) -> bytes:
    """The request's stdout bytes (what an echoing supervisor sends back)."""
    head, rest = req.split(b"\n", 1)
    f = head.split()
    n_cmd, n_out = int(f[3]), int(f[4])
    return rest[n_cmd:n_cmd + n_out]


BAD_REPLIES = {
    # the finding: n_out + n_err wraps to 0 (output lost, 64 KiB of heap to stderr)
    "wraps-to-zero": lambda req: b"OK 18446744073709551615 1\n",
    # the overflow variant: the sum wraps to the body's length, so the old check passed
    "wraps-to-body": lambda req: b"OK %d %d\nshort" % (WRAP - 1000, 1005),
    "negative": lambda req: b"OK -5 10\nhello",
    "signed": lambda req: b"OK +5 0\nhello",
    "underscore": lambda req: b"OK 1_0 0\n0123456789",
    "short-body": lambda req: b"OK 500 0\nonly a little",
    "long-body": lambda req: b"OK 3 0\nmuch more than three bytes",
    "no-newline": lambda req: b"OK 5 0",
    "spaces": lambda req: b"OK  5 0\nhello",
    "garbage": lambda req: b"\x00\xff garbage \n" * 100,
    # far longer than any emission of this output could be: refused, not held
    "huge": lambda req: b"OK %d 0\n" % (24 << 20) + b"x" * (24 << 20),
}


@pytest.mark.parametrize("bad", list(BAD_REPLIES))
def test_a_reply_that_breaks_the_protocol_shows_the_commands_own_bytes(tmp_path, talk_dir, kind, bad):
    sock = tmp_path / "bad.sock"
    srv, seen = _answering(sock, BAD_REPLIES[bad])
    try:
        d = kind
        got = _call(d, talk_dir, "talk", sock)
    finally:
        srv.close()
    raw = _raw(talk_dir)
    assert len(seen) == 1, "the capture asked the (hostile) engine"
    assert got.returncode == 7
    assert got.stdout == raw.stdout, got.stdout[:200]
    assert got.stderr == raw.stderr, got.stderr[:200]


def test_an_honest_reply_is_still_used(tmp_path, talk_dir, kind):
    """The control: the same server, a well-formed reply, and the emission replaces the output."""
    sock = tmp_path / "ok.sock"
    srv, _ = _answering(sock, lambda req: b"OK 9 4\nshortenedERR\n")
    try:
        got = _call(kind, talk_dir, "talk", sock)
    finally:
        srv.close()
    assert (got.returncode, got.stdout, got.stderr) == (7, b"shortened", b"ERR\n")


def test_a_supervisor_that_drips_bytes_cannot_hold_the_call(tmp_path, talk_dir, kind):
    """A byte every 0.5 s (each recv's own timeout never fires): the round trip has one deadline
    (shims.TIMEOUT_S) and the agent gets the raw output soon after it, not after the drip ends."""
    sock = tmp_path / "drip.sock"
    stop = threading.Event()

    def drip(conn):
        with conn:
            unix_socket.request(conn)
            for byte in b"OK 9 0\nshortened"[:-1] * 4:     # ~30 s of drip, never a whole reply
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return                                  # the capture gave up: it closed
                if stop.wait(0.5):
                    return

    srv = unix_socket.serve(sock, drip)
    try:
        d = kind
        t0 = time.monotonic()
        got = _call(d, talk_dir, "talk", sock, timeout=40)
        took = time.monotonic() - t0
    finally:
        stop.set()
        srv.close()
    raw = _raw(talk_dir)
    assert (got.returncode, got.stdout, got.stderr) == (7, raw.stdout, raw.stderr)
    assert took < shims.TIMEOUT_S + 2.5, f"the drip held the call {took:.1f} s"


def test_a_supervisor_that_reads_slowly_cannot_hold_the_call(tmp_path, talk_dir, kind):
    """The other direction: the request is taken 64 KiB every 0.5 s (each send makes progress; the
    2 MB would take 16 s)."""
    sock = tmp_path / "sip.sock"
    stop = threading.Event()

    def sip(conn):
        with conn:
            for _ in range(80):
                try:
                    if not conn.recv(65536):
                        return
                except OSError:
                    return
                if stop.wait(0.5):
                    return

    srv = unix_socket.serve(sock, sip)
    try:
        d = kind
        t0 = time.monotonic()
        got = _call(d, talk_dir, "big", sock, timeout=60)
        took = time.monotonic() - t0
    finally:
        stop.set()
        srv.close()
    raw = _raw(talk_dir, "big")
    assert (got.returncode, got.stdout, got.stderr) == (0, raw.stdout, raw.stderr)
    assert took < shims.TIMEOUT_S + 2.5, f"the slow reader held the call {took:.1f} s"


def test_the_real_command_gets_the_callers_argv0(tmp_path, kind):
    """GNU sed names itself by argv[0] in its messages: `sed: -e expression…`, as without capsule,
    on the agent's own view (captured, here an echoing engine) and in a pipe (exec'd in place)."""
    sed = "/usr/bin/sed"
    assert os.access(sed, os.X_OK)
    sock = tmp_path / "echo.sock"
    srv, seen = _answering(sock, lambda req: b"RAW\n")
    try:
        d = kind
        real_dir = tmp_path / "nothing"
        real_dir.mkdir()
        captured = _call(d, real_dir, "sed -e k </dev/null", sock)
        piped = _call(d, real_dir, "sed -e k </dev/null 2>&1 | cat", sock)
    finally:
        srv.close()
    direct = subprocess.run(["bash", "-c", "sed -e k </dev/null"], capture_output=True,
                            env={"PATH": "/usr/bin:/bin"})
    assert direct.stderr.startswith(b"sed: -e expression")
    assert len(seen) == 1, "the first call was the agent's view, captured"
    assert captured.stderr == direct.stderr and captured.returncode == direct.returncode
    assert piped.stdout == direct.stderr


def test_a_venvs_python_keeps_its_venv_under_the_shim(tmp_path, kind):
    """The exception to the caller's argv[0]: CPython looks a bare argv[0] up on PATH to find its
    prefix, and would find the shim there (no venv: site-packages gone); it gets its real path."""
    venv_bin = Path(sys.executable).parent
    sock = tmp_path / "raw.sock"
    srv, _ = _answering(sock, lambda req: b"RAW\n")
    try:
        d = kind
        script = "python3 -c 'import sys; print(sys.prefix)'"
        captured = _call(d, venv_bin, script, sock)
        piped = _call(d, venv_bin, script + " | cat", sock)
    finally:
        srv.close()
    assert captured.stdout.decode().strip() == piped.stdout.decode().strip() == sys.prefix
