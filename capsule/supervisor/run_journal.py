"""The warm engine's side of a `ctx run` journal (JRN1, docs/shell-protocol.md): the compiled capture
that runs a warm `ctx run` holds the command's output in two memory files as well; it names them in
one JRN1 request, and the engine opens them (/proc/PID/fd/N) and waits for that process to end. One
that ends with them still holding bytes was killed before it showed its output: those bytes are
journalled, redacted (store/journal.keep), and the next `ctx run` archives them and names their
handles, as for an in-process run killed outright.

Not responsible for capture (the capture) nor for archiving (store/journal.recover). Invariant:
nothing is persisted while the run lives, and nothing unredacted ever; a request this side cannot
follow (another user's process, no pidfd, not the capture's memory files) journals nothing.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import threading

from capsule.store import journal

log = logging.getLogger("capsule.run_journal")

MEMFD_PREFIX = "/memfd:capsule-journal-"    # the names the capture gives its memory files
STREAMS = ("stdout", "stderr")


def watch(state_dir, pid: int, fds: tuple[int, int], command: str, cwd: str) -> None:
    """Open the capture's memory files now (it is alive: it just sent the request) and journal what
    they hold if it ends before emptying them. Raises OSError/ValueError when it cannot follow."""
    pidfd = os.pidfd_open(pid)
    files = []
    try:
        for fd in fds:
            link = f"/proc/{pid}/fd/{fd}"
            if not os.readlink(link).startswith(MEMFD_PREFIX):
                raise ValueError(f"JRN1: fd {fd} of {pid} is not a capture's memory file")
            files.append(open(link, "rb", buffering=0))
    except BaseException:
        os.close(pidfd)
        for f in files:
            f.close()
        raise
    thread = threading.Thread(target=_wait, args=(state_dir, pidfd, dict(zip(STREAMS, files)), command, cwd),
                              name=f"run-journal-{pid}", daemon=True)
    _WATCHES.append(thread)          # before it starts: it removes itself when done
    thread.start()


_WATCHES: list[threading.Thread] = []


def settle(timeout: float = 30.0) -> None:
    """Wait (at most `timeout` each) for the watches still going to finish journalling: a process
    about to exit whose runs have ended (`ctx run`'s own engine, cli/own_engine.py)."""
    for thread in list(_WATCHES):
        thread.join(timeout)


def _sealed(f) -> bool:
    """Did the capture seal this memory file against shrinking? The Python capture's way to say "shown":
    its memory files are the command's own output, which a truncation could cut while still written.
    (The compiled capture's are not sealable, F_SEAL_SEAL only: it empties its separate copies.)"""
    try:
        return bool(fcntl.fcntl(f.fileno(), fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK)
    except OSError:
        return False


def _wait(state_dir, pidfd: int, streams: dict, command: str, cwd: str) -> None:
    """(a thread per live run) Block until the capture ends; keep what it left unshown."""
    try:
        poll = select.poll()
        poll.register(pidfd, select.POLLIN)       # readable once the process has exited
        while not poll.poll():
            pass
        if any(_sealed(f) for f in streams.values()):
            return              # the Python capture sealed them: shown, or streaming (capsule_shim.py)
        if journal.keep(state_dir, command, cwd, streams):
            # not the command line: it may carry a secret (the journal holds it redacted)
            log.warning("a ctx run ended before showing its output; journalled for the next run")
    except Exception as exc:  # noqa: BLE001 - a safety net that fails costs only itself
        log.warning("a ctx run's journal failed: %r", exc)
    finally:
        _WATCHES.remove(threading.current_thread())     # the daemon keeps no thread per run it saw
        os.close(pidfd)
        for f in streams.values():
            f.close()
