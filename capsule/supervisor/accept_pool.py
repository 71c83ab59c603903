"""The control socket's transport: threads that accept a connection and serve it start to end.

Not responsible for what a request means (control_server.EngineServer answers it) nor for the
engine's lock. Invariant: while the pool runs, a thread is waiting in accept() (up to `cap` threads),
so a request wakes one thread already asleep in the kernel and no hand-off follows (blocking I/O, no
event loop, no thread started per request: POOL threads live as long as the pool); no accept error
stops the pool; past `max_waiting` connections
still sending their request, the oldest is closed (that shim prints raw).
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Callable

log = logging.getLogger("capsule.supervisor")

POOL = 4                        # threads that live as long as the pool; more start only under load
ACCEPT_BACKOFF_S = (0.01, 0.5)
JOIN_S = 10.0                   # stop(): how long the threads get to finish the connection they serve
EXHAUSTED = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def listen_unix(path: Path) -> socket.socket:
    """A listening Unix stream socket at `path`, owner-only (0600) from the moment it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(socket.SOMAXCONN)
    return sock


class Incoming:
    """One connection's request, read against one deadline for all of it (a client that drips a
    byte at a time cannot extend it), then its reply."""

    def __init__(self, conn: socket.socket, deadline: float, done_reading: Callable[[Incoming], None]):
        self.conn = conn
        self.deadline = deadline
        self.shed = False               # closed by the pool while still sending (no reply then)
        self._buf = bytearray()
        self._done_reading = done_reading

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def _recv(self, n: int) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive whole in time")
        self.conn.settimeout(left)
        chunk = self.conn.recv(n)
        if not chunk:
            raise EOFError("the client closed before its whole request")
        return chunk

    def line(self, limit: int) -> bytes:
        """The bytes up to the first newline (not included), which must come within `limit` bytes."""
        while (end := self._buf.find(b"\n", 0, limit + 1)) < 0:
            if len(self._buf) > limit:
                raise ValueError(f"no request header within {limit} bytes")
            self._buf += self._recv(1 << 16)
        head = bytes(self._buf[:end])
        del self._buf[:end + 1]
        return head

    def exactly(self, n: int) -> bytes:
        if n <= len(self._buf):
            data = bytes(self._buf[:n])
            del self._buf[:n]
            return data
        out = bytearray(n)
        have = len(self._buf)
        out[:have] = self._buf
        self._buf.clear()
        view = memoryview(out)
        while have < n:
            chunk = self._recv(min(n - have, 1 << 20))
            view[have:have + len(chunk)] = chunk
            have += len(chunk)
        return bytes(out)

    def complete(self) -> None:
        """The whole request is here: no longer sheddable."""
        self._done_reading(self)

    def reply(self, data: bytes, timeout: float) -> None:
        """Send the reply and close; a client that gave up costs nothing."""
        try:
            self.conn.settimeout(timeout)
            self.conn.sendall(data)
        except OSError:
            pass


class AcceptPool:
    """Threads that each accept one connection, pass it to `serve` (which reads, answers and may go
    on with work after the reply) and accept again. POOL of them start; one more starts whenever the
    last one waiting in accept() takes a connection (slow clients, a queue for the engine), and such
    extra threads end once the load falls (another waits in accept())."""

    def __init__(self, sock: socket.socket, serve: Callable[[Incoming], None], read_timeout: float,
                 max_waiting: int, cap: int):
        self._sock = sock
        self._serve = serve
        self._read_timeout = read_timeout
        self._max_waiting = max_waiting
        self._cap = cap
        self._lock = threading.Lock()
        # One thread at a time in accept(): the one that served last is likely next, its caches warm
        # (the kernel would hand connections round the waiting threads).
        self._accept_turn = threading.Lock()
        self._waiting: dict[int, Incoming] = {}     # still sending their request, oldest first
        self._threads: set[threading.Thread] = set()
        self._idle = 0                              # threads in accept()
        self._closed = False
        self.shed = 0
        self.active = 0                             # connections accepted and not yet closed

    def start(self) -> None:
        with self._lock:
            for _ in range(POOL):
                self._spawn()

    def _spawn(self) -> None:
        """(under _lock) one more thread, unless the pool is at its cap or closed."""
        if self._closed or len(self._threads) >= self._cap:
            return
        thread = threading.Thread(target=self._run, name="capsule-door", daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:     # no thread to be had: the ones running keep accepting
            log.warning("control socket: no new thread (%r)", exc)
            return
        self._threads.add(thread)

    def _run(self) -> None:
        delay = ACCEPT_BACKOFF_S[0]
        me = threading.current_thread()
        while True:
            with self._lock:
                if self._closed or (len(self._threads) > POOL and self._idle > 0):
                    self._threads.discard(me)
                    return
                self._idle += 1
            try:
                with self._accept_turn:
                    conn, _ = self._sock.accept()
            except OSError as exc:
                with self._lock:
                    self._idle -= 1
                    closed = self._closed
                if closed:
                    continue                # the top of the loop ends the thread
                if exc.errno in EXHAUSTED:
                    self.shed_oldest(max(1, len(self._waiting) // 2))
                log.warning("control socket accept failed (%s); retrying in %.2fs",
                            errno.errorcode.get(exc.errno, repr(exc)), delay)
                time.sleep(delay)
                delay = min(delay * 2, ACCEPT_BACKOFF_S[1])
                continue
            delay = ACCEPT_BACKOFF_S[0]
            incoming = Incoming(conn, time.monotonic() + self._read_timeout, self._done_reading)
            with self._lock:
                self._idle -= 1
                self.active += 1
                if self._idle == 0:
                    self._spawn()       # the next connection finds a thread in accept(), not a queue
                excess = len(self._waiting) - self._max_waiting + 1
                self._waiting[id(incoming)] = incoming
            if excess > 0:
                self.shed_oldest(excess)
            try:
                self._serve(incoming)
            except Exception as exc:  # noqa: BLE001 - serve fails open itself; this thread must live on
                log.warning("control socket: serving a connection failed: %r", exc)
            finally:
                with self._lock:
                    self.active -= 1
                    self._waiting.pop(id(incoming), None)

    def _done_reading(self, incoming: Incoming) -> None:
        with self._lock:
            self._waiting.pop(id(incoming), None)

    def shed_oldest(self, n: int, count: bool = True) -> None:
        """Close the `n` oldest connections that have not finished sending their request: the
        thread reading one sees the end of it and sends nothing."""
        with self._lock:
            victims = [self._waiting.pop(key) for key in list(self._waiting)[:n]]
            if count:
                self.shed += len(victims)
        for incoming in victims:
            incoming.shed = True
            try:
                incoming.conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass                    # closed meanwhile by its own thread

    def waiting(self) -> int:
        return len(self._waiting)

    def stop(self) -> None:
        """Stop accepting (a thread in accept() wakes with EINVAL), close the connections still
        sending, and give the threads JOIN_S to finish the one they serve."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.shed_oldest(len(self._waiting), count=False)
        deadline = time.monotonic() + JOIN_S
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        self._sock.close()
