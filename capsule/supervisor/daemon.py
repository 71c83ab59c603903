"""The engine daemon: a warm engine for `capsule ctx run` outside a container, started by the first
run that finds none (cli/warm.py) and reused by the next ones, like a build tool's daemon. It serves
the control socket's protocol (server.py, docs/shell-protocol.md) on `paths.daemon_socket()`, and
exits after $JACKIN_CTX_DAEMON_IDLE seconds without a request (default 900), or when its socket is
removed or replaced.

It builds the compiled capture beside its socket (`paths.daemon_capture`, before it listens, only
when its source changed): a run that finds this daemon execs that capture, which speaks the protocol.
Not responsible for capture (the compiled capture does it), for the engine (capsule.engine) or for
deciding to be used (cli/warm.py). Invariant: one daemon per socket (an flock on `<socket>.lock`, held for
life: a second one exits at once); the socket is owner-only; rows owed after a reply hold the
state dir's pending lock, so a ledger reader right after a run sees its row (store/finisher.py).

    python -m capsule.supervisor.daemon
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import time

import anyio

from capsule import shims
from capsule.ground import log_handlers, paths, switches
from capsule.supervisor.control_server import EngineServer

log = logging.getLogger("capsule.daemon")

TICK_S = 1.0        # how often the idle clock and the socket file are looked at


def warm_engine():
    """The engine every run would build in-process (same mode and settings: they picked this daemon),
    warmed (Engine.warm: the whole tokenizer, its stores open; rehearsed once serving, _serve)."""
    from capsule.engine import Engine

    engine = Engine()
    engine.defer = True     # rows after the reply (control_server.py)
    engine.warm()
    return engine


def _prune(state_dir) -> None:
    """The stores' retention, as the finisher of an in-process run does it (at most every interval_s)."""
    from capsule.store import retention

    retention.prune_all(state_dir, min_interval_s=retention.settings()["interval_s"])


async def _serve(srv: EngineServer, idle_s: float) -> None:
    await srv.listen()
    ident = os.stat(srv.path).st_ino
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(srv.serve)
        tg.start_soon(srv.rehearse)     # the pipeline's first-use imports, off every run's request
        while True:
            await anyio.sleep(TICK_S)
            if srv.last > started and not srv.busy():      # between runs; its own connections (never raises)
                await anyio.to_thread.run_sync(_prune, srv.engine.state_dir)
            try:
                if os.stat(srv.path).st_ino != ident:
                    log.info("engine daemon: socket %s replaced; exiting", srv.path)
                    break
            except OSError:
                log.info("engine daemon: socket %s removed; exiting", srv.path)
                break
            if time.monotonic() - max(srv.last, started) >= idle_s and not srv.busy():
                log.info("engine daemon: idle %.0f s; exiting after %d requests", idle_s, srv.served)
                srv.close()                 # new runs find no daemon now (in-process, and start one)
                await anyio.sleep(0.2)      # a run that connected just before is answered
                while srv.busy():
                    await anyio.sleep(0.05)
                break
        tg.cancel_scope.cancel()


def main() -> int:
    sock = paths.daemon_socket()
    try:
        fd = os.open(f"{sock}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0            # another daemon has this socket (BlockingIOError), or no state dir to run in
    log_handlers.install()
    os.chdir("/")           # a run's cwd comes with its request; never pin a directory
    started = time.monotonic()
    try:
        engine = warm_engine()
    except Exception as exc:  # noqa: BLE001 - no daemon: the runs stay in-process
        log.error("engine daemon failed to start: %r", exc)
        return 1
    try:
        capture = paths.daemon_capture(sock)
        shims.build_capture(capture.parent, capture.name)   # none (no C compiler): runs stay in-process
    except Exception as exc:  # noqa: BLE001 - no capture: runs stay in-process, the daemon still serves
        log.warning("engine daemon: the compiled capture did not build: %r", exc)
    srv = EngineServer(sock, engine, lambda: {"daemon": True, "pid": os.getpid(), "idle_s": idle})
    idle = switches.daemon_idle()
    log.info("engine daemon on %s, ready in %.0f ms", sock, (time.monotonic() - started) * 1000)
    try:
        anyio.run(_serve, srv, idle)
    finally:
        try:
            engine.close()          # rows still owed are written (patient)
        finally:
            srv.close_held()
    return 0


if __name__ == "__main__":
    sys.exit(main())
