"""`capsule ctx run`'s way to a warm engine: the supervisor's socket when it runs under one
($JACKIN_CTX_SOCKET), else the engine daemon of its settings (supervisor/daemon.py), started on
first use and left to exit when idle; one OBS1 request per run (docs/shell-protocol.md).

Not responsible for capture (run.py), for the engine (the daemon's) nor for the in-process
fallback (run.py uses it whenever find() gives no socket). Imports only ground and the standard
library: this is the path whose client CPU the design bounds (bench_startup: ≤ 60 ms).
Invariant: fail open. No socket, a refused connect: None (run.py's in-process engine); a reply
past the deadline, RAW, or one that breaks the protocol's rules: Raw (the command's own bytes).
"""

from __future__ import annotations

import _socket     # the C module under `socket`: that one builds its enums at import (~16 M instructions)
import os
import stat
import subprocess
import sys
import time

from capsule.ground import paths, switches

MAX_BYTES = 32 << 20          # larger outputs stay in-process (its spool streams; the shims' bound too)
TIMEOUT_S = 3.0               # the round trip, connect to the last byte, plus PER_MIB_S per MiB sent
PER_MIB_S = 1.0
REPLY_SLACK = 64 << 10        # a reply's body: at most 2 x the request's output + this (shims.REPLY_SLACK)


class Raw(Exception):
    """The warm engine answered RAW, too late, or out of the protocol: show the command's own bytes."""


def find() -> str | None:
    """The socket of a warm engine to use, or None (in-process). Starts the daemon when it is
    missing or dead (it serves the next run)."""
    if switches.is_on(switches.NO_DAEMON):
        return None
    explicit = os.environ.get(switches.SOCKET)
    if explicit and _ours(explicit):
        return explicit
    path = str(paths.daemon_socket())
    if _ours(path):
        return path
    start_daemon()
    return None


def unreachable(path: str) -> None:
    """The socket find() gave refused the connection: a daemon that died leaves its socket file; a
    new one (which replaces the file) serves the next run."""
    if path == str(paths.daemon_socket()):
        start_daemon()


def _ours(path: str) -> bool:
    """A socket owned by us (the state dir is owner-only; a stranger's socket gets no output)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid()


def start_daemon() -> None:
    """Start the daemon for these settings in the background (its own session, stdio on /dev/null);
    one that is already starting holds its lock, and a second one exits at once."""
    sock = paths.daemon_socket()
    try:
        import fcntl

        fd = os.open(f"{sock}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return                  # a daemon holds it: starting, or about to answer
        finally:
            os.close(fd)
        subprocess.Popen([sys.executable, "-m", "capsule.supervisor.daemon"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         close_fds=True, cwd="/")
    except OSError:
        pass                        # no daemon: every run stays in-process


def observe(path: str, command: str, out: bytes, err: bytes, code: int, duration_ms: float,
            intent: str | None) -> tuple[bytes, bytes] | None:
    """(stdout, stderr) of the emission; None when the engine could not be reached at all (nothing
    was sent: the caller may use its own engine); raises Raw when the output must pass raw."""
    scope = (os.environ.get(switches.SCOPE) or os.environ.get("CLAUDE_CODE_SESSION_ID")
             or os.environ.get("CODEX_THREAD_ID") or "local")
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    parts = [p.encode("utf-8", "surrogateescape") for p in (command, scope, cwd, intent or "")]
    c, sc, wd, it = parts
    head = b"OBS1 %d %d %d %d %d %d %d 0 %d\n" % (code, int(duration_ms * 1000), len(c), len(out), len(err),
                                                   len(sc), len(wd), len(it))
    deadline = time.monotonic() + TIMEOUT_S + PER_MIB_S * (len(out) + len(err)) / (1 << 20)
    max_body = 2 * (len(out) + len(err)) + REPLY_SLACK
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            s.connect(path)
        except OSError:
            return None             # dead (refused), gone: nothing sent
        try:
            for part in (head + c, out, err, sc, wd, it):
                _send(s, part, deadline)
            s.shutdown(_socket.SHUT_WR)
            reply = _receive(s, deadline, max_body + 64)
        except OSError as exc:
            raise Raw(f"warm engine: {exc!r}") from exc
    finally:
        s.close()
    return _parse(reply, max_body)


def _send(s: _socket.socket, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        s.settimeout(_left(deadline))
        view = view[s.send(view):]


def _receive(s: _socket.socket, deadline: float, most: int) -> bytes:
    chunks, size = [], 0
    while True:
        s.settimeout(_left(deadline))
        b = s.recv(1 << 20)
        if not b:
            return b"".join(chunks)
        size += len(b)
        if size > most:
            raise Raw("warm engine: reply over the protocol's bound")
        chunks.append(b)


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Raw("warm engine: over the round trip's deadline")
    return left


def _parse(reply: bytes, max_body: int) -> tuple[bytes, bytes]:
    nl = reply.find(b"\n")
    fields = reply[:nl].split(b" ") if nl > 0 else []
    if len(fields) != 3 or fields[0] != b"OK":
        raise Raw(f"warm engine: {reply[:40]!r}")
    n_out, n_err = (_length(f, max_body) for f in fields[1:])
    body = reply[nl + 1:]
    if n_out is None or n_err is None or n_out > len(body) or n_err != len(body) - n_out:
        raise Raw("warm engine: reply lengths do not match its body")
    return body[:n_out], body[n_out:]


def _length(field: bytes, most: int) -> int | None:
    if not (0 < len(field) <= 20 and field.isdigit()):
        return None
    n = int(field)
    return n if n <= most else None
