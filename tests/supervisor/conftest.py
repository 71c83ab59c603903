from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from capsule.supervisor.control_server import EngineServer


class Running:
    def __init__(self, proc: subprocess.Popen, state: Path):
        self.proc = proc
        self.state = state
        self.socket = state / "engine.sock"

    def wait_for(self, path: Path, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{path} never appeared; supervisor rc={self.proc.poll()} "
                                     f"stderr={self.proc.stderr.read() if self.proc.poll() is not None else ''}")
            time.sleep(0.02)

    def finish(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)


@pytest.fixture
def supervise(tmp_path):
    started: list[subprocess.Popen] = []

    def start(*cmd: str, role: str = "python-dev", env: dict | None = None, grace: float = 5.0) -> Running:
        state = tmp_path / "state"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
        full_env.update({"JACKIN_CTX_STATE_DIR": str(state)})
        full_env.update(env or {})
        proc = subprocess.Popen([sys.executable, "-m", "capsule", "supervise", "--role", role,
                                 "--grace", str(grace), "--", *cmd],
                                env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(proc)
        return Running(proc, state)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def serve_while(sock, body, engine=None):
    """Run `body(server)` in a thread while the server serves on `sock`; its return value."""
    result = {}

    async def main():
        server = EngineServer(sock, engine)
        await server.listen()
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            result["value"] = await anyio.to_thread.run_sync(body, server)
            tg.cancel_scope.cancel()

    anyio.run(main)
    return result["value"]


@pytest.fixture
def serving():
    """serving(sock, body, engine=None): body(server) in a thread while a real EngineServer serves on sock."""
    return serve_while
