"""The PID-1 core (tini-sized): start the agent in its own process group with the terminal, forward
signals to that group, reap every child and orphan, stop stragglers, and give back the agent's status.

Not responsible for anything the agent runs next to (engine, proxy, index, usage, registration:
supervisor/core.py and subsystems.py orchestrate those around this core). Invariant: the exit status is the agent's
(128+n when signal n killed it); no zombie outlives a reap pass; stragglers get SIGTERM, then SIGKILL
after the grace period.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import time

import anyio

log = logging.getLogger("capsule.supervisor")

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
             signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH)
DEFAULT_GRACE_S = 5.0
REAP_INTERVAL_S = 0.5
PR_SET_CHILD_SUBREAPER = 36


def exit_code(status: int) -> int:
    """waitpid status -> shell-style code: the exit code, or 128+n for signal n."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 1


class Pid1:
    """One agent process: spawned, signalled, reaped; `done` is set when it is gone."""

    def __init__(self, grace_s: float = DEFAULT_GRACE_S):
        self.grace_s = grace_s
        self.agent_pid: int | None = None
        self.agent_status: int | None = None
        self.reaped = 0
        self.done = anyio.Event()

    def prepare(self) -> None:
        """Before anything starts: adopt orphans outside a container; never stop on the terminal."""
        if os.getpid() != 1:
            become_subreaper()
        try:
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        except (OSError, ValueError):
            pass

    def spawn(self, path: str, argv: list[str], env: dict[str, str]) -> None:
        sigdef = set(FORWARDED) | {signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTTOU, signal.SIGCHLD}
        self.agent_pid = os.posix_spawn(path, argv, env, setpgroup=0, setsigdef=sigdef, setsigmask=set())
        give_terminal(self.agent_pid)
        log.info("agent pid %d: %s", self.agent_pid, " ".join(argv))

    def failed_to_start(self, status: int) -> None:
        self.agent_status = status
        self.done.set()

    async def on_signals(self, signals) -> None:
        async for signum in signals:
            if signum == signal.SIGCHLD:
                self.reap()
            else:
                self.forward(signum)

    def forward(self, signum: int) -> None:
        if self.agent_pid is None or self.agent_status is not None:
            return
        log.info("forwarding signal %d to agent group %d", signum, self.agent_pid)
        try:
            os.killpg(self.agent_pid, signum)
        except ProcessLookupError:
            try:
                os.kill(self.agent_pid, signum)
            except ProcessLookupError:
                pass

    async def reap_periodically(self) -> None:
        while True:
            await anyio.sleep(REAP_INTERVAL_S)
            self.reap()

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.reaped += 1
            if pid == self.agent_pid:
                self.agent_status = status
                take_terminal()
                self.done.set()

    async def stop_stragglers(self) -> None:
        for signum in FORWARDED:  # shutting down: a late signal must not kill us before the reap
            signal.signal(signum, signal.SIG_IGN)
        pids = descendants(os.getpid())
        if not pids:
            self.reap()
            return
        log.info("stopping %d straggler(s): SIGTERM, SIGKILL after %.1fs", len(pids), self.grace_s)
        for pid in pids:
            _kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline:
            self.reap()
            if not descendants(os.getpid()):
                return
            await anyio.sleep(0.05)
        for pid in descendants(os.getpid()):
            _kill(pid, signal.SIGKILL)
        await anyio.sleep(0.05)
        self.reap()

    def exit_status(self) -> int:
        return exit_code(self.agent_status if self.agent_status is not None else 1 << 8)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def descendants(root: int) -> list[int]:
    """Every live process below `root` (as PID 1 that is every other process), zombies excluded."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2:].split()
        if rest[0] == b"Z":
            continue
        children.setdefault(int(rest[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def become_subreaper() -> None:
    """Outside a container, adopt the agent's orphans so they are reaped and stopped with us."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; PID 1 does not need it
        pass


def give_terminal(pgid: int) -> None:
    try:
        if os.isatty(0):
            os.tcsetpgrp(0, pgid)
            # An agent that read the terminal before it was handed over got SIGTTIN and stopped;
            # wake it now that it owns the terminal (a no-op for a running group).
            os.killpg(pgid, signal.SIGCONT)
    except OSError:
        pass


def take_terminal() -> None:
    try:
        if os.isatty(0):
            os.tcsetpgrp(0, os.getpgrp())
    except OSError:
        pass
