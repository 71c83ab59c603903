"""The HTTP plumbing the fakes share: a threaded server on port 0, SSE framing, and `Canned`, an
upstream that answers every request with fixed bytes and records it.

Not responsible for any API's shape (anthropic.py, openai.py). Invariant: servers run on daemon
threads, so a test that forgets close() never hangs the run.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    request_queue_size = 256     # a fan-out of 25 arrives at once (the default backlog is 5)
    daemon_threads = True


def serve(handler_cls, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    server = _Server((host, 0), handler_cls)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def sse(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class Quiet(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def read_body(self) -> bytes:
        n = int(self.headers.get("content-length", 0) or 0)
        return self.rfile.read(n) if n else b""

    def send_json(self, obj, status: int = 200, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeServer:
    """Base of the fakes: `url` (scheme, host, port), `port`, close()."""

    host = "127.0.0.1"   # a subclass may listen elsewhere: a docker network's gateway (tests/container)

    def _recording(self) -> None:
        """What an API fake keeps: a run id (response ids unique across fakes), the parsed bodies,
        (path, headers, raw bytes) of each request, one log entry per answer."""
        self.run = uuid.uuid4().hex[:8]
        self.requests: list[dict] = []
        self.raw: list[tuple[str, dict[str, str], bytes]] = []
        self.log: list[dict] = []
        self.lock = threading.Lock()

    def _start(self, handler_cls) -> None:
        self.server = serve(handler_cls, self.host)
        self.port = self.server.server_address[1]
        self.url = f"http://{self.host}:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Canned(FakeServer):
    """An upstream that answers every request with fixed bytes (status, headers, body chunks) and records
    each request as received: (method, path, headers, body)."""

    def __init__(self, status: int = 200, headers: list[tuple[str, str]] | None = None, chunks: list[bytes] = ()):
        self.status, self.headers, self.chunks = status, headers or [], list(chunks)
        self.seen: list[tuple[str, str, dict, bytes]] = []
        canned = self

        class Handler(Quiet):
            protocol_version = "HTTP/1.1"

            def _any(self):
                canned.seen.append((self.command, self.path, dict(self.headers), self.read_body()))
                self.send_response(canned.status)
                for k, v in canned.headers:
                    self.send_header(k, v)
                self.send_header("content-length", str(sum(map(len, canned.chunks))))
                self.end_headers()
                if self.command != "HEAD":
                    for c in canned.chunks:
                        self.wfile.write(c)
                        self.wfile.flush()

            do_GET = do_POST = do_HEAD = do_PUT = _any

        self._start(Handler)

    @property
    def bodies(self) -> list[bytes]:
        return [body for _, _, _, body in self.seen]

    @property
    def last_body(self) -> bytes:
        return self.seen[-1][3] if self.seen else b""
