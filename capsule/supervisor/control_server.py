"""The control socket: a Unix stream server in the supervisor that keeps the engine warm for shims.

Not responsible for running commands (the shim does) or for compression (capsule.engine).
Invariant: the socket is owner-only (0600); any failure answers RAW so the shim emits raw output;
running out of descriptors (EMFILE) or memory never stops the server: it sheds the oldest
connections still waiting for their request, backs off and accepts again (the shed shims print raw).

The wire protocol (OBS1, HOOK1, JRN1, PING, STATUS; one request per connection; limits, timeouts and the
fail-open rules the shims follow) is written down once, in docs/shell-protocol.md.
"""

from __future__ import annotations

import errno
import json
from functools import partial
import logging
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from capsule.agents import limits
from capsule.ground import paths
from capsule.shims import REPLY_SLACK, door, hook_door
from capsule.store import finisher
from capsule.supervisor import run_journal

log = logging.getLogger("capsule.supervisor")

MAX_HEADER = 256
MAX_PAYLOAD = 64 << 20
READ_TIMEOUT_S = 30.0
INLINE_BYTES = 64 << 10     # outputs up to this are shaped on the loop itself (see _answer)
MAX_WAITING = 64            # connections still sending their request; past this the oldest is shed
ACCEPT_BACKOFF_S = (0.01, 0.5)
SWITCH_INTERVAL_S = 0.001
ROW_RETRY_S = 1.0           # rows a busy ledger sent back are tried again this often, request or not
_EXHAUSTED = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class EngineServer:
    def __init__(self, path: Path, engine: Any | None, status: Callable[[], dict] | None = None,
                 warming: bool = False):
        """warming: the engine comes later (set_engine): the socket answers PING at once, and a
        request that needs the engine waits for it (a shim's deadline passing first means raw)."""
        self.path = Path(path)
        self.engine = engine
        self._warming = warming
        self._warm = None                 # an anyio.Event while warming (made on the loop: listen())
        self.status = status or (lambda: {})
        self.lock = anyio.Lock()
        self.served = 0
        self.failed = 0
        self.shed = 0
        self.last = time.monotonic()     # the last request's arrival (the daemon's idle clock)
        self._listener = None
        self._waiting: dict[int, anyio.CancelScope] = {}   # in arrival order: oldest first
        self._wanted = 0                  # requests waiting for the engine: a drain yields to them
        self._held: tuple[int, str] | None = None   # store/finisher's pending lock, while rows are owed
        self._retrying = False            # a task retries rows a busy ledger sent back (_retry_owed)

    def set_engine(self, engine: Any | None) -> None:
        """The warm engine (None: it failed to start, every request is answered RAW)."""
        self.engine = engine
        self._warming = False
        if self._warm is not None:
            self._warm.set()

    async def rehearse(self) -> None:
        """Once the engine serves: the sample outputs (Engine.warm_up_samples) through an understudy
        over scratch stores, one at a time under the engine's lock, so every module the pipeline
        loads on first use is loaded before the agent's first call of that kind, and a request that
        arrives meanwhile waits for one sample at most (the lock serves its waiters in order)."""
        if self.engine is None:
            return
        try:
            with tempfile.TemporaryDirectory(prefix="capsule-warm-") as scratch:
                twin = self.engine.understudy(Path(scratch))
                try:
                    for obs in twin.warm_up_samples():
                        async with self.lock:
                            await anyio.to_thread.run_sync(twin.rehearse, obs)
                finally:
                    twin.close()
        except Exception as exc:  # noqa: BLE001 - unrehearsed, a kind's first request pays its imports
            log.warning("engine rehearsal failed: %r", exc)

    async def _engine(self) -> Any | None:
        if self._warming and self._warm is not None:
            await self._warm.wait()
        return self.engine

    async def listen(self, bound: socket.socket | None = None) -> None:
        """bound: a Unix socket the caller already bound at self.path and listens on (`ctx run`'s
        private one, cli/own_engine.py: made before its capture starts, whose first request comes at once)."""
        if self._warming and self._warm is None:
            self._warm = anyio.Event()
        if bound is not None:
            self._listener = await anyio.abc.SocketListener.from_socket(bound)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() or self.path.is_symlink():
            self.path.unlink()
        old = os.umask(0o177)
        try:
            self._listener = await anyio.create_unix_listener(self.path)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)

    async def serve(self) -> None:
        """Accept until the listener is closed. Resource exhaustion sheds and backs off; no accept
        error ends the loop, because the supervisor must outlive every client."""
        assert self._listener is not None, "listen() first"
        # A request wakes this loop while a worker thread may be writing rows: the loop gets the GIL
        # within 1 ms, not the default 5 ms (sys.getswitchinterval), each time it needs it.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        delay = ACCEPT_BACKOFF_S[0]
        async with self._listener, anyio.create_task_group() as tg:
            while True:
                try:
                    stream = await self._listener.accept()
                except anyio.ClosedResourceError:
                    return
                except (OSError, anyio.BrokenResourceError) as exc:
                    cause = exc if isinstance(exc, OSError) else exc.__cause__
                    code = getattr(cause, "errno", None)
                    if code in _EXHAUSTED:
                        self._shed(max(1, len(self._waiting) // 2))
                    log.warning("control socket accept failed (%s); retrying in %.2fs",
                                errno.errorcode.get(code, repr(cause)), delay)
                    await anyio.sleep(delay)
                    delay = min(delay * 2, ACCEPT_BACKOFF_S[1])
                    continue
                delay = ACCEPT_BACKOFF_S[0]
                if len(self._waiting) >= MAX_WAITING:
                    self._shed(len(self._waiting) - MAX_WAITING + 1)
                tg.start_soon(self._handle, stream)

    def _shed(self, n: int) -> None:
        """Close the `n` oldest connections that have not finished sending their request."""
        for key in list(self._waiting)[:n]:
            self._waiting.pop(key).cancel()
            self.shed += 1

    def close(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass

    def busy(self) -> bool:
        """A request being read or answered, or rows still owed."""
        return bool(self._waiting) or self.lock.locked() or self._wanted > 0

    def close_held(self) -> None:
        """The pending lock, when the engine's rows were written by its close()."""
        self._release()

    async def _handle(self, stream) -> None:
        with anyio.CancelScope() as scope:
            key = id(scope)
            self._waiting[key] = scope
            try:
                await self._handle_one(stream, key)    # closes the stream, shed or not
            finally:
                self._waiting.pop(key, None)

    async def _handle_one(self, stream, key: int) -> None:
        async with stream:
            try:
                with anyio.fail_after(READ_TIMEOUT_S):
                    reply = await self._answer(BufferedByteReceiveStream(stream), key)
            except Exception as exc:  # noqa: BLE001 - the shim falls back to raw
                self.failed += 1
                log.warning("control socket request failed: %r", exc)
                reply = b"RAW\n"
            try:
                await stream.send(reply)
            except Exception:  # noqa: BLE001 - the shim gave up (timeout); nothing to do
                pass
        await self._drain(yielding=True)
        await self._retry_owed()

    async def _retry_owed(self) -> None:
        """Rows a busy ledger sent back (Engine.drain) are owed, and readers wait for them (the
        pending lock): they are tried again every ROW_RETRY_S until written, without waiting for
        the next request, which may never come. One task does it; a request's own drain goes first."""
        if self._retrying:
            return
        self._retrying = True
        try:
            while self.engine is not None and self.engine.pending():
                await anyio.sleep(ROW_RETRY_S)
                if self._wanted == 0:
                    await self._drain(yielding=True)
        finally:
            self._retrying = False

    async def _drain(self, yielding: bool) -> None:
        """Token counts and ledger rows of what was answered, written in a worker thread after the
        reply, off the shim's path. yielding: a request that arrives meanwhile waits for one row at
        most (the drain stops there; that request's handler drains the rest after its own reply)."""
        if self.engine is None:
            return
        stop = (lambda: self._wanted > 0) if yielding else None
        async with self.lock:       # first: a drain in progress has taken its rows off pending()
            if self.engine.pending():
                await anyio.to_thread.run_sync(partial(self.engine.drain, stop=stop))
            # A request waiting for the lock (_wanted) took the pending lock before its row exists:
            # it is not released under it; that request's own drain releases it after its reply.
            if not self.engine.pending() and self._wanted == 0:
                self._release()

    def _hold(self) -> None:
        """While rows are owed, ledger readers of this state dir wait for them (store/finisher.py)."""
        if self._held is None and self.engine is not None:
            self._held = finisher.hold(self.engine.state_dir, "engine")

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            finisher.release(held)

    async def _answer(self, buf: BufferedByteReceiveStream, key: int | None = None) -> bytes:
        head = await buf.receive_until(b"\n", MAX_HEADER)
        self.last = time.monotonic()
        fields = head.split()
        verb = fields[0] if fields else b""
        if verb == b"PING":
            return b"PONG %d\n" % os.getpid()
        if verb == b"STATUS":
            if await self._engine() is not None:
                # Rows deferred past a reply are written under the lock: a STATUS answers after
                # them, so whoever asks (doctor, a test) then reads a ledger that has every row.
                await self._drain(yielding=False)
            info = dict(self.status())
            info.update(served=self.served, failed=self.failed, shed=self.shed)
            return json.dumps(info, sort_keys=True).encode() + b"\n"
        if verb == b"HOOK1" and len(fields) == 2:
            return await self._hook(buf, int(fields[1]), key)
        if verb == b"JRN1" and len(fields) == 6:
            return await self._journal(buf, *(int(f) for f in fields[1:]), key=key)
        if verb != b"OBS1" or len(fields) not in (7, 8, 9, 10):
            raise ValueError(f"bad request header {head[:60]!r}")
        code, duration_us, n_cmd, n_out, n_err, n_scope, *rest = (int(f) for f in fields[1:])
        n_cwd, n_meta, n_intent = (*rest, 0, 0, 0)[:3]
        if min(n_cmd, n_out, n_err, n_scope, n_cwd, n_meta, n_intent) < 0 or \
                n_cmd + n_out + n_err + n_scope + n_cwd + n_meta + n_intent > MAX_PAYLOAD:
            raise ValueError("payload out of bounds")
        command = (await _exactly(buf, n_cmd)).decode("utf-8", "surrogateescape")
        out = await _exactly(buf, n_out)
        err = await _exactly(buf, n_err)
        scope = (await _exactly(buf, n_scope)).decode("utf-8", "surrogateescape") or None
        cwd = (await _exactly(buf, n_cwd)).decode("utf-8", "surrogateescape") or None
        meta = limits.parse_meta(await _exactly(buf, n_meta))
        intent = (await _exactly(buf, n_intent)).decode("utf-8", "surrogateescape") or None
        self._waiting.pop(key, None)     # the whole request is here: no longer sheddable
        if await self._engine() is None:
            return b"RAW\n"
        work = partial(door.observe_command, self.engine, command, out, err, code, duration_us / 1000.0, scope,
                       cwd=cwd, meta=meta, intent=intent)
        self._hold()
        self._wanted += 1               # a drain running now stops after its current row (_drain)
        try:
            await self.lock.acquire()
        finally:
            self._wanted -= 1
        try:
            # A small output (nearly every call: ~0.3-7 ms of engine work) is answered here, on the
            # loop: a hop to a worker thread and back costs two more wake-ups, each a scheduler slot
            # on a busy machine. A large one goes to a thread, so the loop (PING, the proxy) stays live.
            if n_out + n_err <= INLINE_BYTES:
                new_out, new_err = work()
            else:
                new_out, new_err = await anyio.to_thread.run_sync(work)
        finally:
            self.lock.release()
        if len(new_out) + len(new_err) > 2 * (n_out + n_err) + REPLY_SLACK:
            raise ValueError("emission over the protocol's bound")     # the shims would refuse it
        self.served += 1
        return b"OK %d %d\n" % (len(new_out), len(new_err)) + bytes(new_out) + bytes(new_err)

    async def _hook(self, buf: BufferedByteReceiveStream, n: int, key: int | None) -> bytes:
        """One tool result from the hook door, answered like a shim's command (one engine, one lock)."""
        if not 0 <= n <= MAX_PAYLOAD:
            raise ValueError("payload out of bounds")
        event = json.loads(await _exactly(buf, n) or b"{}")
        self._waiting.pop(key, None)
        if await self._engine() is None:
            return b"RAW\n"
        self._hold()
        self._wanted += 1               # as for OBS1: a drain yields to it and keeps the pending lock
        try:
            await self.lock.acquire()
        finally:
            self._wanted -= 1
        try:
            value = await anyio.to_thread.run_sync(hook_door.answer, self.engine, event)
        finally:
            self.lock.release()
        self.served += 1
        out = hook_door.hook_output(value)
        return b"OK %d\n" % len(out) + out


    async def _journal(self, buf: BufferedByteReceiveStream, pid: int, fd_out: int, fd_err: int, n_cmd: int,
                       n_cwd: int, key: int | None) -> bytes:
        """A warm `ctx run`'s journal (supervisor/run_journal.py): no engine work and no row; it never
        waits for the engine (the state dir is this process's own)."""
        if min(pid, fd_out, fd_err, n_cmd, n_cwd) < 0 or n_cmd + n_cwd > MAX_PAYLOAD:
            raise ValueError("payload out of bounds")
        command = (await _exactly(buf, n_cmd)).decode("utf-8", "surrogateescape")
        cwd = (await _exactly(buf, n_cwd)).decode("utf-8", "surrogateescape")
        self._waiting.pop(key, None)
        state = self.engine.state_dir if self.engine is not None else paths.state_dir()
        run_journal.watch(state, pid, (fd_out, fd_err), command, cwd)
        return b"OK 0 0\n"


async def _exactly(buf: BufferedByteReceiveStream, n: int) -> bytes:
    return await buf.receive_exactly(n) if n else b""


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
