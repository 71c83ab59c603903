"""The control socket's request path (supervisor/control_server.py) in-process, with a real engine and
real clients: a request never waits on the event loop (it is served by the pool's threads, which the
loop only starts and stops), and a request that arrives while owed rows are being written waits for
one row at most, after which every row still lands."""

from __future__ import annotations

import subprocess
import threading
import time

import anyio

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.supervisor.control_server import EngineServer, request

RAW = b"".join(b"step %d: processed shard-%d of the nightly batch\n" % (i, i * 7) for i in range(3000))


def _obs(cmd: bytes, raw: bytes) -> bytes:
    return b"OBS1 0 1000 %d %d 0 0\n" % (len(cmd), len(raw)) + cmd + raw


def _warm(state_dir) -> Engine:
    engine = Engine(state_dir)
    engine.defer = True
    engine.warm()
    engine.observe(Observation(raw=RAW, command="sh warm.sh"))    # first-use imports, before any timing
    engine.drain()
    return engine


def test_a_request_is_answered_while_the_event_loop_is_blocked(state_dir, tmp_path):
    sock = tmp_path / "e.sock"
    engine = _warm(state_dir)
    version = subprocess.run(["git", "--version"], capture_output=True).stdout
    got: dict[str, float | bytes] = {}

    def client():
        got["pong"] = request(sock, b"PING\n", 10)
        got["obs"] = request(sock, _obs(b"git --version", version), 10)
        got["at"] = time.monotonic()

    async def main():
        server = EngineServer(sock, engine)
        await server.listen()
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            await anyio.sleep(0.2)
            calls = threading.Thread(target=client)
            calls.start()
            time.sleep(4)               # the loop is stuck (a slow task, a long GC): nothing of it runs
            got["unblocked"] = time.monotonic()
            await anyio.to_thread.run_sync(calls.join)
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert got["pong"].startswith(b"PONG") and got["obs"].startswith(b"OK ")
    assert got["at"] < got["unblocked"], "answered only once the event loop ran again"


def test_a_request_waits_for_one_owed_row_at_most_and_every_row_lands(state_dir, tmp_path):
    sock = tmp_path / "e.sock"
    engine = _warm(state_dir)
    before = engine.ledger.count()
    for i in range(150):                # rows owed: the next reply's thread writes them after it
        engine.observe(Observation(raw=RAW + b"run %d\n" % i, command=f"sh batch-{i}.sh"))
    assert engine.pending()
    seen: dict[str, object] = {}

    def body():
        first = request(sock, _obs(b"sh one.sh", RAW), 30)        # its thread drains the 150 after it
        time.sleep(0.05)                                           # the drain is under way
        t0 = time.monotonic()
        second = request(sock, _obs(b"sh two.sh", RAW), 30)
        seen["second_s"] = time.monotonic() - t0
        seen["owed_then"] = engine.pending()                      # the drain yielded, it did not finish
        seen["replies"] = (first[:3], second[:3])
        status = request(sock, b"STATUS\n", 60)                    # answered after every owed row
        seen["status"] = status

    async def main():
        server = EngineServer(sock, engine)
        await server.listen()
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            await anyio.to_thread.run_sync(body)
            tg.cancel_scope.cancel()

    t0 = time.monotonic()
    anyio.run(main)
    assert seen["replies"] == (b"OK ", b"OK ")
    assert seen["owed_then"] is True, "the second request waited for the whole drain"
    assert b'"served": 2' in seen["status"]
    assert engine.ledger.count() == before + 152          # the 150 owed, one.sh and two.sh: none lost
    assert seen["second_s"] < (time.monotonic() - t0) / 4, seen


def test_a_request_out_of_the_protocols_bounds_is_answered_raw(tmp_path, serving):
    """docs/shell-protocol.md's limits, enforced by the server: each is a failure (RAW), not a hang."""
    sock = tmp_path / "e.sock"
    bad = [b"X" * 300 + b"\n",                                  # header past 256 bytes, no newline in it
           b"OBS1 0 1000 -1 0 0 0\n",                           # a negative length
           b"OBS1 0 1000 1 %d 0 0\n" % (64 << 20),              # past the 64 MiB payload
           b"OBS1 0 1000 4 10 0 0\nabc",                        # fewer bytes than announced, then EOF
           b"HOOK1 -5\n",
           b"BOGUS\n"]
    got = serving(sock, lambda _server: {"replies": [request(sock, payload, 10) for payload in bad],
                                          "status": request(sock, b"STATUS\n", 10)})
    assert got["replies"] == [b"RAW\n"] * len(bad)
    assert b'"failed": %d' % len(bad) in got["status"] and b'"served": 0' in got["status"]


def test_a_big_request_runs_the_engine_on_one_thread_and_a_small_one_where_it_was_read(state_dir, tmp_path):
    """tiktoken's regex caches serve fast only the thread that encoded first in the process (others
    take a locked slow path, ~1/3 more CPU a token): a big output's engine call runs on the server's
    one engine thread, which encodes first, whichever pool thread read the request."""
    sock = tmp_path / "e.sock"
    engine = _warm(state_dir)
    where: list[tuple[int, str]] = []
    observe = engine.observe

    def traced(obs):                    # the real engine's call, its thread noted
        where.append((len(obs.raw), threading.current_thread().name))
        return observe(obs)

    engine.observe = traced
    replies = []

    async def main():
        server = EngineServer(sock, engine)
        await server.listen()
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            for i in range(6):
                raw = RAW + b"run %d\n" % i
                replies.append(await anyio.to_thread.run_sync(request, sock, _obs(b"sh big.sh", raw), 30))
                replies.append(await anyio.to_thread.run_sync(request, sock, _obs(b"echo hi", b"hi\n"), 30))
            tg.cancel_scope.cancel()
        server.close()

    anyio.run(main)
    assert all(r.startswith(b"OK ") for r in replies), replies
    big = {name for size, name in where if size > 2 << 10}
    small = {name for size, name in where if size < 2 << 10}
    assert big == {"capsule-engine"}, where
    assert small == {"capsule-door"}, where
