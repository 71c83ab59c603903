"""The work a `ctx run` / `ctx pipe` does after its output is written (counting the raw input's
tokens, writing the ledger row), done by a detached child so the agent's tool call ends with the output.

Not responsible for the work itself (Engine.drain) nor for what the ledger holds.
Invariant: a reader of the ledger (Ledger.rows/get/count/stats) first waits for every finisher of its
state dir still running (each holds an flock on a file under pending/ until its rows are written),
so it sees the same rows as when the work was done before the process exited.
"""

from __future__ import annotations

import fcntl
import os
import time

from capsule.ground import paths

DIR = "pending"
WAIT_S = 60.0        # a reader waits at most this long for one finisher (a loaded machine)


def detach(state_dir, job) -> bool:
    """Run job in a detached child (own session, stdio on /dev/null); False when that cannot be
    arranged, and the caller runs job itself."""
    held = hold(state_dir, "")             # taken before the fork: a reader after our exit waits on it
    if held is None:
        return False
    fd, path = held
    try:
        pid = os.fork()
    except OSError:
        release(held)
        return False
    if pid:
        os.close(fd)                       # the child's copy holds the lock
        return True
    try:                                   # the child: never returns
        os.setsid()                        # a signal to the agent's process group is not for it
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):           # the agent's pipes close when our parent exits
            os.dup2(null, target)
        job()
    except BaseException:  # noqa: BLE001 - a lost row costs no output; nothing to report to
        pass
    finally:
        _unlink(path)
        os._exit(0)                        # no atexit, no finalizers of the parent's store handles


def hold(state_dir, name: str) -> tuple[int, str] | None:
    """A pending lock (a finisher's, or a long-lived writer's: the engine daemon, the supervisor, rows
    owed after a reply): readers wait for it until release(); None when it cannot be taken."""
    try:
        d = os.path.join(state_dir, DIR)
        paths.private_dir(d)
        prefix = f"{name}-" if name else ""
        path = os.path.join(d, f"{prefix}{os.getpid()}-{time.time_ns()}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        _unlink(path)
        return None
    return fd, path


def release(held: tuple[int, str]) -> None:
    fd, path = held
    _unlink(path)           # first: a reader that finds the file free would take it for a dead finisher's
    os.close(fd)


def unlock(held: tuple[int, str]) -> None:
    """Readers go on, and the file stays for rehold(): a long-lived writer (the control socket) takes
    one flock per call, not a new file. A reader that finds it free clears it, as a dead finisher's."""
    fcntl.flock(held[0], fcntl.LOCK_UN)


def rehold(held: tuple[int, str], state_dir, name: str) -> tuple[int, str] | None:
    """An unlocked hold locked again; a new hold when a reader cleared its file meanwhile (checked
    once locked: a reader clearing it holds its own lock until the file is gone)."""
    fd, path = held
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            return held
    except OSError:
        pass
    os.close(fd)
    return hold(state_dir, name)


def wait(state_dir, timeout: float = WAIT_S) -> None:
    """Wait for the finishers of state_dir still running; clear the files of finishers that died."""
    d = os.path.join(state_dir, DIR)
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        path = os.path.join(d, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue                       # finished meanwhile
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
                    continue
                _unlink(path)              # free and still there: its finisher died before its unlink
                break
        finally:
            os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
