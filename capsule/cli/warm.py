"""`capsule ctx run`'s way to a warm engine: the supervisor's socket when it runs under one
($JACKIN_CTX_SOCKET), else the engine daemon of its settings (supervisor/daemon.py), started on
first use and left to exit when idle. When one is reachable the run becomes the compiled capture
(shims/shim_template/capsule_capture.c: exec, no Python work after the socket is found), which
runs the command and speaks the socket protocol (docs/shell-protocol.md) as the shims do.

Not responsible for capture (the compiled capture, or the Python shim's), for the engine (the
daemon's, or the run's own: cli/own_engine.py) nor for the protocol (written once, in the captures).
Imports only ground and the standard library: this is the path whose client CPU the design bounds
(bench_startup: <= 60 ms).
Invariant: fail open. No socket, no compiled capture, a command not found: hand_over() returns
and the run's own engine serves it (cli/own_engine.py); once exec'd, the capture's fail-open rules hold.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from capsule.ground import paths, switches

CAPTURE = "capsule-capture"   # shims.CAPTURE: in the image's shim dir, or built by the daemon beside its socket


def find() -> str | None:
    """The socket of a warm engine to use, or None (in-process). Starts the daemon when it is
    missing or dead (it serves the next run): a daemon holds its socket's lock for life, so a socket
    file whose lock is free was left by one that died."""
    if switches.is_on(switches.NO_DAEMON):
        return None
    explicit = os.environ.get(switches.SOCKET)
    if explicit and _ours(explicit):
        return explicit
    path = str(paths.daemon_socket())
    if _ours(path) and not _lock_free(path):
        return path
    start_daemon(path)
    return None


def _ours(path: str) -> bool:
    """A socket owned by us (the state dir is owner-only; a stranger's socket gets no output)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid()


def _lock_free(sock: str) -> bool | None:
    """Is `<sock>.lock` free (no daemon holds it)? None when it cannot be opened (no state dir)."""
    import fcntl

    try:
        fd = os.open(f"{sock}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except OSError:
        return False                # a daemon holds it: starting, or about to answer
    finally:
        os.close(fd)


def start_daemon(sock: str) -> None:
    """Start the daemon for these settings in the background (its own session, stdio on /dev/null);
    one that is already starting holds its lock, and a second one exits at once."""
    if not _lock_free(sock):
        return
    try:
        subprocess.Popen([sys.executable, "-m", "capsule.supervisor.daemon"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         close_fds=True, cwd="/")
    except OSError:
        pass                        # no daemon: every run stays in-process


def capture_for(sock: str) -> str | None:
    """The compiled capture that serves runs on `sock`: the daemon's own build beside its socket,
    else (the supervisor's socket) the one installed with the image's shims; None when there is none
    (no C compiler: the run's own engine uses the Python shim's capture)."""
    for cand in (paths.daemon_capture(sock), paths.CONTAINER_SHIM_DIR / CAPTURE):
        if os.access(cand, os.X_OK):
            return str(cand)
    return None


def find_command(name: str) -> str | None:
    """The program a command line names, as execvp would find it (None: run.py reports 127/126)."""
    if "/" in name:
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    for d in os.environ.get("PATH", os.defpath).split(":"):
        cand = os.path.join(d or ".", name)
        if os.access(cand, os.X_OK) and not os.path.isdir(cand):
            return cand
    return None


def run_options(sock: str, intent: str | None, own_group: bool) -> list[str]:
    """The capture's options before REAL (capsule_capture.c's run_options(), capsule_shim.py's too)."""
    scope = (os.environ.get(switches.SCOPE) or os.environ.get("CLAUDE_CODE_SESSION_ID")
             or os.environ.get("CODEX_THREAD_ID") or "local")
    opts = ["--socket", sock, "--scope", scope, "--stderr", "--journal"]
    if intent is not None:
        opts += ["--intent", intent]
    if own_group:
        opts.append("--group")
    return opts


def hand_over(argv: list[str], intent: str | None, own_group: bool) -> None:
    """Become the compiled capture for this run when a warm engine is reachable (never returns
    then); return when there is none to reach, the capture is missing or the command is not found."""
    sock = find()
    capture = sock and capture_for(sock)
    real = capture and find_command(argv[0])
    if not real:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(capture, [capture, *run_options(sock, intent, own_group), real, *argv])
    except OSError:
        return                      # not runnable after all: the run's own engine (own_engine.py)
