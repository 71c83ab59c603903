"""A fake engine socket for the shim tests and benchmarks: a Unix socket whose connections go, one at a
time, to a handler the caller writes (record the request, answer RAW, echo the output, hang…).

Invariant: the server thread is a daemon and ends when the socket is closed.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path


def serve(path: str | Path, handle: Callable[[socket.socket], None], backlog: int = 16) -> socket.socket:
    """Listen on `path` and call handle(conn) for each connection; close the returned socket to stop."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(backlog)

    def accept_all() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            handle(conn)

    threading.Thread(target=accept_all, daemon=True).start()
    return srv


def request(conn: socket.socket, chunk: int = 1 << 16) -> bytes:
    """Everything the client sent, up to its shutdown of writing."""
    return b"".join(iter(lambda: conn.recv(chunk), b""))
