"""Run the proxy door: on 127.0.0.1, in a background thread (supervisor) or in the foreground (CLI).

Not responsible for what the proxy does to a request (app.py) or for pointing an agent at it
(clients.py). Writes proxy.json in the state dir (address, upstreams without credentials, pid) so
`doctor` can say where it is, and removes it on a clean stop.
Invariant: start() either returns a listening proxy within its timeout or raises; it never leaves
a half-started server behind.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import contextlib
import signal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from typing import TYPE_CHECKING

from capsule.ground import paths

if TYPE_CHECKING:   # the app pulls in the HTTP stack; doctor only reads proxy.json through this module
    from capsule.proxy.app import Settings

log = logging.getLogger("capsule.proxy")

HOST = "127.0.0.1"
START_TIMEOUT_S = 10.0


def redact(url: str) -> str:
    """An upstream URL fit for a file: no user:password, no query string."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "(unparsable url)"


class ProxyServer:
    def __init__(self, settings: Settings, port: int = 0, host: str = HOST):
        from capsule.proxy.app import Proxy  # noqa: PLC0415 - bench_startup "capsule ctx doctor" (+140 ms at the top)

        self.settings, self.host, self.requested_port = settings, host, port
        self.proxy = Proxy(settings)
        self.port: int | None = None
        self._sock: socket.socket | None = None
        self._server = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_url(self) -> str:
        from capsule.proxy.app import OPENAI_PREFIX  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

        return self.url + OPENAI_PREFIX

    def bind(self) -> None:
        # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that name it, and without it
        # Nagle plus delayed ACKs hold each response's body ~40 ms behind its headers.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.requested_port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        sock.set_inheritable(False)
        self._sock = sock
        self.port = sock.getsockname()[1]

    def _uvicorn(self):
        import uvicorn  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

        class Server(uvicorn.Server):
            """uvicorn re-raises SIGTERM/SIGINT when its loop ends, which would kill the process before
            proxy.json is removed; here the caller re-raises after its own cleanup."""

            @contextlib.contextmanager
            def capture_signals(self):
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                old = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
                try:
                    yield
                finally:
                    for sig, handler in old.items():
                        signal.signal(sig, handler)

        config = uvicorn.Config(self.proxy, lifespan="on", access_log=False, log_level="warning",
                                server_header=False, date_header=False, timeout_keep_alive=75,
                                timeout_graceful_shutdown=3)
        return Server(config)

    def start(self, timeout: float = START_TIMEOUT_S) -> "ProxyServer":
        """Listen in a daemon thread; returns when requests are served."""
        self.bind()
        self._server = self._uvicorn()
        self._thread = threading.Thread(target=self._run, name="capsule-proxy", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"proxy did not start within {timeout:.0f}s")
            time.sleep(0.01)
        self._write_state()
        return self

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        except Exception as exc:  # noqa: BLE001 - reported through start()'s timeout / doctor
            log.error("proxy stopped: %r", exc)

    def serve_forever(self, bound: bool = False) -> None:
        """Foreground (the CLI): uvicorn handles SIGINT/SIGTERM and shuts down cleanly."""
        if not bound:
            self.bind()
        self._server = self._uvicorn()
        self._write_state()
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self._cleanup()
        for sig in reversed(getattr(self._server, "_captured_signals", [])):   # end as the signal says
            signal.raise_signal(sig)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        try:
            state = _state_path(self.settings.state_dir)
            if read_state(self.settings.state_dir).get("pid") == os.getpid():
                state.unlink()
        except OSError:
            pass
        self.proxy.close()

    def _write_state(self) -> None:
        data = {"pid": os.getpid(), "url": self.url, "openai_url": self.openai_url,
                "anthropic_upstream": redact(self.settings.anthropic_upstream),
                "openai_upstream": redact(self.settings.openai_upstream),
                "shims_on": self.settings.shims_on, "started": time.time()}
        paths.write_private(_state_path(self.settings.state_dir), json.dumps(data, indent=1))


def _state_path(state_dir) -> Path:
    return Path(state_dir) / paths.PROXY_STATE


def read_state(state_dir) -> dict:
    try:
        return json.loads(_state_path(state_dir).read_text())
    except (OSError, ValueError):
        return {}
