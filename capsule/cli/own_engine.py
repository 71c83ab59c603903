"""`capsule ctx run` with no warm engine to reach (JACKIN_CTX_NO_DAEMON=1, the first run while the
daemon starts): the run brings its own. It binds a private owner-only socket, forks a child that
serves that socket with the supervisor's server code (control_server.EngineServer: the run's JRN1
and OBS1 requests) and builds its engine while the command runs, and becomes the capture itself:
the compiled one when there is one (cli/warm.py's candidates), else the Python shim's run mode.

Not responsible for capture, signals or the exit status (the capture: the run's pid stays the one
that holds the output, so a SIGKILL to it loses nothing the engine's journal watch cannot keep, and
its status and signals are the capture's, bit-exact), nor for the protocol (docs/shell-protocol.md).
Invariant: fail open. No socket, no fork, no capture to exec: serve() returns and run.py runs the
command raw; the child never writes to the run's stdout or stderr (they go to /dev/null in it).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
from pathlib import Path

from capsule.cli import warm
from capsule.ground import paths

PY_CAPTURE = "run-capture.py"      # in the state dir: the Python shim rendered for its run mode
# The Python capture's round trip to this engine: it is cold (imports, the tokenizer) and ours, not a
# supervisor that may hang; a large output takes the engine seconds per MiB on a busy machine.
ROUND_TRIP_S, PER_MIB_S = 30.0, 5.0


def serve(argv: list[str], intent: str | None, own_group: bool) -> None:
    """Become the run's capture with a child serving its engine (never returns then); return when
    that cannot be set up (run.py then runs the command raw)."""
    real = warm.find_command(argv[0])
    capture = real and _capture()
    if not capture:
        return
    sock_dir = None
    try:
        sock_dir = tempfile.mkdtemp(prefix="capsule-run-")      # 0700, and a short path for the socket
        path = os.path.join(sock_dir, "engine.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)             # listening before the capture starts: its JRN1 comes at once
        listener.listen(8)
        pidfd = os.pidfd_open(os.getpid())          # readable once the capture (this pid) has ended
        sys.stdout.flush()
        sys.stderr.flush()
        child = os.fork()
    except OSError:
        if sock_dir:
            shutil.rmtree(sock_dir, ignore_errors=True)
        return
    if child == 0:
        try:
            _serve_child(listener, pidfd, Path(path))
        finally:
            os._exit(0)
    listener.close()
    os.close(pidfd)
    try:
        os.execv(capture[0], [*capture, *warm.run_options(path, intent, own_group), real, *argv])
    except OSError:
        os.kill(child, signal.SIGKILL)  # nobody will ask it anything: raw, in run.py
        shutil.rmtree(sock_dir, ignore_errors=True)


def _capture() -> list[str] | None:
    """The capture's argv head: the compiled one that a daemon of these settings built (or the
    image's), else the Python shim's run mode, rendered once into the state dir (its #! line names
    the interpreter: nothing of capsule is imported to run it)."""
    compiled = warm.capture_for(str(paths.daemon_socket()))
    if compiled:
        return [compiled]
    try:
        script = paths.state_dir() / PY_CAPTURE
        if not os.access(script, os.X_OK):
            _render_python_capture(script)
    except (OSError, ValueError):
        return None
    return [str(script)]


def _render_python_capture(script: Path) -> None:
    """The Python shim, rendered for these settings (rewritten only when that changes)."""
    from capsule import shims

    text = shims.render(script.parent, timeout_s=ROUND_TRIP_S, per_mib_s=PER_MIB_S)
    if os.access(script, os.X_OK) and script.read_text(encoding="utf-8") == text:
        return
    tmp = script.with_name(f".{script.name}.{os.getpid()}.tmp")    # many first runs at once: one each
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o700)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o700)            # whatever the umask: owner-only, and runnable before it is named
        os.replace(tmp, script)
    finally:
        tmp.unlink(missing_ok=True)


def _serve_child(listener: socket.socket, pidfd: int, path: Path) -> None:
    """(the forked child) Serve the capture's requests until it ends, then finish the engine's rows."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)               # the agent's call ends with the capture, not with this child
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)     # a Ctrl-C is for the command; the capture shows its output
    import logging

    import anyio

    from capsule.ground import log_handlers
    from capsule.supervisor import run_journal
    from capsule.supervisor.control_server import EngineServer

    log_handlers.install()
    server = EngineServer(path, None, warming=True)
    try:
        anyio.run(_serve_until_done, server, listener, pidfd)
        run_journal.settle()            # a killed capture's output is journalled before this child goes
        _finish(server)
    except Exception as exc:  # noqa: BLE001 - the capture already showed its output (or raw)
        logging.getLogger("capsule.run").warning("ctx run's own engine failed: %r", exc)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
    try:
        _render_python_capture(paths.state_dir() / PY_CAPTURE)     # fresh for the next run's settings
    except (OSError, ValueError):
        pass


async def _serve_until_done(server, listener: socket.socket, pidfd: int) -> None:
    import anyio

    await server.listen(listener)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        tg.start_soon(_build_engine, server)
        await anyio.wait_readable(pidfd)        # the capture has ended: it asked all it will ask
        tg.cancel_scope.cancel()


async def _build_engine(server) -> None:
    """The engine, built while the command runs (a request that comes first waits for it)."""
    import anyio

    try:
        engine = await anyio.to_thread.run_sync(_new_engine, abandon_on_cancel=True)
    except Exception:  # noqa: BLE001 - no engine: every request is answered RAW (fail open)
        engine = None
    server.set_engine(engine)


def _new_engine():
    from capsule.engine import Engine

    engine = Engine()
    engine.defer = True     # rows after the reply, written by this child once the capture has ended
    return RowsAfterTheRun(engine)


class RowsAfterTheRun:
    """The engine as this child's server sees it, but for its rows: the server drains them between
    requests with a short budget, for the next request's sake (a busy ledger can cost a row); here
    there is no next request, so they are written once the capture has ended, patiently (_finish)."""

    def __init__(self, engine):
        self.engine = engine

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def drain(self, patient: bool = False, stop=None) -> None:
        """Nothing while serving (the server holds the ledger readers' pending lock meanwhile)."""


def _finish(server) -> None:
    """Rows a busy ledger sent back are still owed: written now (ledger readers wait for them:
    store/finisher.py), then the stores' retention, as an in-process run's finisher did it."""
    engine = server.engine.engine if server.engine is not None else None
    if engine is None:
        return
    try:
        if engine.pending():
            engine.drain(patient=True)
    finally:
        server.close_held()
    from capsule.store import retention

    retention.prune_all(engine.state_dir, min_interval_s=retention.settings()["interval_s"])
