"""The control socket: a Unix stream server in the supervisor that keeps the engine warm for shims.

Not responsible for running commands (the shim does), for compression (capsule.engine) or for the
threads that accept and read connections (accept_pool.py). Invariant: the socket is owner-only (0600);
any failure answers RAW so the shim emits raw output; a reply is sent as soon as its emission exists
and the connection closed before the ledger row is written; running out of descriptors (EMFILE) or
memory never stops the server: it sheds the oldest connections still waiting for their request,
backs off and accepts again (the shed shims print raw); the engine's big calls, its rows and its
rehearsals run on one thread, the process's first to encode (EngineThread).

The wire protocol (OBS1, HOOK1, JRN1, PING, STATUS; one request per connection; limits, timeouts and the
fail-open rules the shims follow) is written down once, in docs/shell-protocol.md.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import anyio

from capsule.agents import limits
from capsule.ground import paths, processes
from capsule.shims import REPLY_SLACK, door, hook_door
from capsule.store import finisher
from capsule.supervisor import run_journal
from capsule.supervisor.accept_pool import AcceptPool, Incoming, listen_unix
from capsule.supervisor.engine_thread import EngineThread

log = logging.getLogger("capsule.supervisor")

MAX_HEADER = 256
MAX_PAYLOAD = 64 << 20
READ_TIMEOUT_S = 30.0
MAX_WAITING = 64            # connections still sending their request; past this the oldest is shed
MORE_THREADS = 16           # threads past MAX_WAITING: requests read whole, waiting for the engine
SWITCH_INTERVAL_S = 0.001
ROW_RETRY_S = 1.0           # rows a busy ledger sent back are tried again this often, request or not
HANDOFF_BYTES = 2 << 10     # an output this big is observed on the engine thread (EngineThread)


REHEARSALS = "warm-up"      # under the state dir: the rehearsals' scratch stores, one dir per process


def rehearsal_root(engine: Any) -> Path | None:
    """Where rehearsals keep their scratch stores: STATE/warm-up/<pid>, owner-only, not /tmp, so that
    a process killed while rehearsing (~1 MB of stores) leaves them where the next rehearsal on this
    state dir clears them; None (the system temp dir) when the engine has no state dir."""
    state = getattr(engine, "state_dir", None)
    if state is None:
        return None
    root = Path(state) / REHEARSALS
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        for left in root.iterdir():
            if left.name.isdigit() and int(left.name) != os.getpid() and not processes.alive(int(left.name)):
                shutil.rmtree(left, ignore_errors=True)
        mine = root / str(os.getpid())
        mine.mkdir(mode=0o700, exist_ok=True)
        return mine
    except OSError:
        return None


class EngineServer:
    def __init__(self, path: Path, engine: Any | None, status: Callable[[], dict] | None = None,
                 warming: bool = False):
        """warming: the engine comes later (set_engine): the socket answers PING at once, and a
        request that needs the engine waits for it (its deadline passing first means RAW)."""
        self.path = Path(path)
        self.engine = engine
        self._warm = threading.Event()
        self._engine_thread: EngineThread | None = None
        if not warming:
            self.set_engine(engine)
        self.status = status or (lambda: {})
        self.served = 0
        self.failed = 0
        self.last = time.monotonic()     # the last request's arrival (the daemon's idle clock)
        self._listener: socket.socket | None = None
        self._pool: AcceptPool | None = None
        self._shed_before = 0             # connections shed by pools that have stopped
        # The engine serves one call at a time. Requests go first: a request announces itself
        # (_wanted) before it waits, a drain or a rehearsal takes the lock only while none is
        # announced, and a drain stops between rows when one is.
        self._engine_lock = threading.Lock()
        self._state = threading.Condition()     # guards _wanted, _held, the counters
        self._wanted = 0
        self._held: tuple[int, str] | None = None   # store/finisher's pending lock file (kept: rehold)
        self._holding = False             # locked: rows are owed, ledger readers wait for them
        self._retrying = False            # a thread retries rows a busy ledger sent back (_retry_owed)
        self._stopping = threading.Event()    # set while no pool serves: the retry thread ends
        self._retry: threading.Thread | None = None

    @property
    def shed(self) -> int:
        return self._shed_before + (self._pool.shed if self._pool is not None else 0)

    def set_engine(self, engine: Any | None) -> None:
        """The warm engine (None: it failed to start, every request is answered RAW)."""
        self.engine = engine
        if engine is None or self._engine_thread is not None:
            self._warm.set()
        else:                           # warm once the engine thread has encoded first
            self._engine_thread = EngineThread(self._warm.set)

    async def rehearse(self) -> None:
        """Once the engine serves: the sample outputs (Engine.warm_up_samples) through an understudy
        over scratch stores, one at a time, each when no request wants the engine, so every module
        the pipeline loads on first use is loaded before the agent's first call of that kind, and a
        request that arrives meanwhile waits for one sample at most."""
        if self.engine is not None:
            await anyio.to_thread.run_sync(self._rehearse)

    def _rehearse(self) -> None:
        try:
            with tempfile.TemporaryDirectory(prefix="rehearsal-", dir=rehearsal_root(self.engine)) as scratch:
                twin = self.engine.understudy(Path(scratch))
                try:
                    for obs in twin.warm_up_samples():
                        with self._background_turn():
                            self._on_engine(lambda: twin.rehearse(obs))
                finally:
                    twin.close()
        except Exception as exc:  # noqa: BLE001 - unrehearsed, a kind's first request pays its imports
            log.warning("engine rehearsal failed: %r", exc)

    async def listen(self, bound: socket.socket | None = None) -> None:
        """bound: a Unix socket the caller already bound at self.path and listens on (`ctx run`'s
        private one, cli/own_engine.py: made before its capture starts, whose first request comes at once)."""
        self._listener = bound if bound is not None else listen_unix(self.path)

    async def serve(self) -> None:
        """Serve until cancelled: the pool's threads accept and answer (accept_pool.py); no accept
        error ends them, because the supervisor must outlive every client."""
        assert self._listener is not None, "listen() first"
        # A request wakes a pool thread while another may be writing rows: it gets the GIL within
        # 1 ms, not the default 5 ms (sys.getswitchinterval), each time it needs it.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        pool = AcceptPool(self._listener, self._serve_one, READ_TIMEOUT_S, MAX_WAITING,
                          MAX_WAITING + MORE_THREADS)
        self._pool, self._listener = pool, None
        self._stopping.clear()
        pool.start()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._stop, pool)

    def _stop(self, pool: AcceptPool) -> None:
        """No more requests, and no thread left writing rows: whoever closes the engine next
        (the supervisor, the daemon) writes what is still owed."""
        self._stopping.set()
        self._warm.set()                # a request still waiting for a warm engine is answered RAW now
        pool.stop()
        if self._retry is not None:
            self._retry.join()
        self._shed_before += pool.shed
        self._pool = None

    def _on_engine(self, fn: Callable[[], Any]) -> Any:
        return self._engine_thread.call(fn) if self._engine_thread is not None else fn()

    def close(self) -> None:
        if self._engine_thread is not None:
            self._engine_thread.stop()
            self._engine_thread = None
        try:
            self.path.unlink()
        except OSError:
            pass

    def busy(self) -> bool:
        """A connection being read or answered, or rows being written or wanted."""
        return bool(self._pool is not None and self._pool.active) or self._engine_lock.locked() \
            or self._wanted > 0

    def close_held(self) -> None:
        """The pending lock and its file, when the engine's rows were written by its close()."""
        self._stopping.set()
        with self._state:
            held, self._held, self._holding = self._held, None, False
        if held is not None:
            finisher.release(held)

    # ---- one connection, in a pool thread ------------------------------------------------
    def _serve_one(self, req: Incoming) -> None:
        try:
            try:
                reply = self._answer(req)
            except Exception as exc:  # noqa: BLE001 - the shim falls back to raw
                if req.shed:
                    return              # closed under it (accept_pool.py): the shim prints raw
                with self._state:
                    self.failed += 1
                log.warning("control socket request failed: %r", exc)
                reply = b"RAW\n"
            req.reply(reply, READ_TIMEOUT_S)
        finally:
            req.conn.close()            # the shim has its reply: the row is none of its wait
        self._drain(yielding=True)
        self._retry_owed()

    def _answer(self, req: Incoming) -> bytes:
        head = req.line(MAX_HEADER)
        self.last = time.monotonic()
        fields = head.split()
        verb = fields[0] if fields else b""
        if verb == b"PING":
            return b"PONG %d\n" % os.getpid()
        if verb == b"STATUS":
            req.complete()
            if self._engine(req) is not None:
                # Rows deferred past a reply are written first: a STATUS answers after them, so
                # whoever asks (doctor, a test) then reads a ledger that has every row.
                self._drain(yielding=False, deadline=req.deadline)
            info = dict(self.status())
            info.update(served=self.served, failed=self.failed, shed=self.shed)
            return json.dumps(info, sort_keys=True).encode() + b"\n"
        if verb == b"HOOK1" and len(fields) == 2:
            return self._hook(req, int(fields[1]))
        if verb == b"JRN1" and len(fields) == 6:
            return self._journal(req, *(int(f) for f in fields[1:]))
        if verb != b"OBS1" or len(fields) not in (7, 8, 9, 10):
            raise ValueError(f"bad request header {head[:60]!r}")
        code, duration_us, n_cmd, n_out, n_err, n_scope, *rest = (int(f) for f in fields[1:])
        n_cwd, n_meta, n_intent = (*rest, 0, 0, 0)[:3]
        if min(n_cmd, n_out, n_err, n_scope, n_cwd, n_meta, n_intent) < 0 or \
                n_cmd + n_out + n_err + n_scope + n_cwd + n_meta + n_intent > MAX_PAYLOAD:
            raise ValueError("payload out of bounds")
        command = req.exactly(n_cmd).decode("utf-8", "surrogateescape")
        out = req.exactly(n_out)
        err = req.exactly(n_err)
        scope = req.exactly(n_scope).decode("utf-8", "surrogateescape") or None
        cwd = req.exactly(n_cwd).decode("utf-8", "surrogateescape") or None
        meta = limits.parse_meta(req.exactly(n_meta))
        intent = req.exactly(n_intent).decode("utf-8", "surrogateescape") or None
        req.complete()
        if self._engine(req) is None:
            return b"RAW\n"
        with self._request_turn(req.deadline):
            def observe() -> tuple[bytes, bytes]:
                return door.observe_command(self.engine, command, out, err, code, duration_us / 1000.0,
                                            scope, cwd=cwd, meta=meta, intent=intent)
            new_out, new_err = self._on_engine(observe) if n_out + n_err >= HANDOFF_BYTES else observe()
        if len(new_out) + len(new_err) > 2 * (n_out + n_err) + REPLY_SLACK:
            raise ValueError("emission over the protocol's bound")     # the shims would refuse it
        with self._state:
            self.served += 1
        return b"OK %d %d\n" % (len(new_out), len(new_err)) + bytes(new_out) + bytes(new_err)

    def _hook(self, req: Incoming, n: int) -> bytes:
        """One tool result from the hook door, answered like a shim's command (one engine, one lock)."""
        if not 0 <= n <= MAX_PAYLOAD:
            raise ValueError("payload out of bounds")
        event = json.loads(req.exactly(n) or b"{}")
        req.complete()
        if self._engine(req) is None:
            return b"RAW\n"
        with self._request_turn(req.deadline):
            value = self._on_engine(lambda: hook_door.answer(self.engine, event)) if n >= HANDOFF_BYTES \
                else hook_door.answer(self.engine, event)
        with self._state:
            self.served += 1
        out = hook_door.hook_output(value)
        return b"OK %d\n" % len(out) + out

    def _journal(self, req: Incoming, pid: int, fd_out: int, fd_err: int, n_cmd: int, n_cwd: int) -> bytes:
        """A warm `ctx run`'s journal (supervisor/run_journal.py): no engine work and no row; it never
        waits for the engine (the state dir is this process's own)."""
        if min(pid, fd_out, fd_err, n_cmd, n_cwd) < 0 or n_cmd + n_cwd > MAX_PAYLOAD:
            raise ValueError("payload out of bounds")
        command = req.exactly(n_cmd).decode("utf-8", "surrogateescape")
        cwd = req.exactly(n_cwd).decode("utf-8", "surrogateescape")
        req.complete()
        state = self.engine.state_dir if self.engine is not None else paths.state_dir()
        run_journal.watch(state, pid, (fd_out, fd_err), command, cwd)
        return b"OK 0 0\n"

    def _engine(self, req: Incoming) -> Any | None:
        """The engine, once warm; a request whose deadline passes first is answered RAW."""
        if not self._warm.wait(req.remaining()):
            raise TimeoutError("the engine did not warm before the request's deadline")
        return self.engine

    # ---- the engine's turns --------------------------------------------------------------
    @contextmanager
    def _request_turn(self, deadline: float, hold: bool = True) -> Iterator[None]:
        """The engine for a request, ahead of any drain or rehearsal. hold: the call will owe a row,
        so ledger readers wait for it from now on (taken with the announcement, so no drain can
        release the pending lock between the two)."""
        with self._state:
            self._wanted += 1           # a drain running now stops after its current row (_drain)
            if hold:
                self._hold()
        try:
            got = self._engine_lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        finally:
            with self._state:
                self._wanted -= 1
                self._state.notify_all()
        if not got:
            raise TimeoutError("the engine stayed busy past the request's deadline")
        try:
            yield
        finally:
            self._engine_lock.release()

    @contextmanager
    def _background_turn(self) -> Iterator[None]:
        """The engine for work nobody waits on (a drain, a rehearsal): once no request wants it."""
        with self._state:
            self._state.wait_for(lambda: self._wanted == 0)
        with self._engine_lock:
            yield

    def _drain(self, yielding: bool, deadline: float | None = None) -> None:
        """Token counts and ledger rows of what was answered, written after the reply, off the shim's
        path. yielding: a request that arrives meanwhile waits for one row at most (the drain stops
        there; that request's thread drains the rest after its own reply)."""
        if self.engine is None:
            return
        turn = self._background_turn() if yielding else \
            self._request_turn(time.monotonic() + READ_TIMEOUT_S if deadline is None else deadline, hold=False)
        with turn:
            if self.engine.pending():     # on the engine thread: rows count and redact what it just read
                self._on_engine(lambda: self.engine.drain(stop=(lambda: self._wanted > 0) if yielding else None))
            # A request announced meanwhile took the pending lock before its row exists: it is not
            # released under it; that request's own drain releases it after its reply.
            with self._state:
                if not self.engine.pending() and self._wanted == 0:
                    self._release()

    def _retry_owed(self) -> None:
        """Rows a busy ledger sent back (Engine.drain) are owed, and readers wait for them (the
        pending lock): a thread tries them again every ROW_RETRY_S until written, without waiting
        for the next request, which may never come. One thread does it; a request's own drain goes first."""
        with self._state:
            if self._retrying or self.engine is None or not self.engine.pending():
                return
            self._retrying = True
            self._retry = threading.Thread(target=self._retry_loop, name="capsule-rows", daemon=True)
        try:
            self._retry.start()
        except RuntimeError as exc:     # no thread to be had: the next request's drain tries again
            log.warning("control socket: no thread to retry owed rows (%r)", exc)
            with self._state:
                self._retrying = False

    def _retry_loop(self) -> None:
        try:
            while self.engine.pending() and not self._stopping.wait(ROW_RETRY_S):
                if self._wanted == 0:
                    self._drain(yielding=True)
        finally:
            with self._state:
                self._retrying = False

    def _hold(self) -> None:
        """(under _state) While rows are owed, ledger readers of this state dir wait for them
        (store/finisher.py). The lock file is kept between calls: one flock per call, not a new
        file (its create waits on the file system's journal: ~0.3 ms on a busy disk)."""
        if self._holding or self.engine is None:
            return
        if self._held is None:
            self._held = finisher.hold(self.engine.state_dir, "engine")
        else:
            self._held = finisher.rehold(self._held, self.engine.state_dir, "engine")
        self._holding = self._held is not None

    def _release(self) -> None:
        """(under _state)"""
        if self._holding:
            self._holding = False
            finisher.unlock(self._held)


def request(path: Path | str, payload: bytes, timeout: float = 2.0) -> bytes:
    """Client side for the CLI and tests: send one request, return the whole reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(1 << 20):
            chunks.append(chunk)
    return b"".join(chunks)


def ping(path: Path | str, timeout: float = 0.5) -> bool:
    try:
        return request(path, b"PING\n", timeout).startswith(b"PONG")
    except OSError:
        return False


def status(path: Path | str, timeout: float = 1.0) -> dict | None:
    try:
        return json.loads(request(path, b"STATUS\n", timeout))
    except (OSError, ValueError):
        return None


def wait_ready(path: Path | str, timeout: float = 30.0, warm: bool = True) -> float:
    """Seconds until the socket answers PING (the supervisor is ready: the agent starts) and, with
    warm, STATUS too (its engine, warmed after ready, serves requests); raises TimeoutError."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if ping(path, 0.2):
            if not warm or status(path, max(0.2, timeout - (time.monotonic() - start))) is not None:
                return time.monotonic() - start
        time.sleep(0.01)
    raise TimeoutError(f"no supervisor answered on {path} within {timeout}s")
