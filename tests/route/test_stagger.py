"""Spawn stagger: simultaneous same-prefix requests through the proxy pay one prefix write, not N."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.fakes.cache import TimedCacheMessages as TimedCacheAPI  # noqa: E402

from capsule.proxy.app import Settings  # noqa: E402
from capsule.proxy.proxy_server import ProxyServer  # noqa: E402
from capsule.route.stagger import Settings as StaggerSettings  # noqa: E402

SYSTEM = [{"type": "text", "text": "You are a subagent. " + "Rules of the house. " * 600,
           "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": f"tool{i}", "description": "does a thing " * 40, "input_schema": {"type": "object"}} for i in range(8)]


def body(i: int, model: str = "claude-haiku-4-5") -> bytes:
    return json.dumps({"model": model, "max_tokens": 1000, "stream": True, "system": SYSTEM, "tools": TOOLS,
                       "messages": [{"role": "user", "content": f"task {i}: look at part {i}"}]}).encode()


def fan_out(url: str, n: int, model: str = "claude-haiku-4-5") -> list[float]:
    """n requests sent together (as a subagent fan-out); each one's time to its last byte."""
    times = [0.0] * n
    barrier = threading.Barrier(n)

    def one(i):
        barrier.wait()
        t0 = time.monotonic()
        r = httpx2.post(url + "/v1/messages", content=body(i, model), timeout=30,
                        headers={"content-type": "application/json", "x-api-key": "k",
                                 "x-claude-code-session-id": f"sess-{i % 2}"})
        assert r.status_code == 200 and b"message_stop" in r.content
        times[i] = time.monotonic() - t0

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


@pytest.fixture
def proxy(tmp_path):
    servers = []

    def start(upstream: str, **stagger):
        s = ProxyServer(Settings(state_dir=tmp_path, anthropic_upstream=upstream,
                                 stagger=StaggerSettings(**stagger))).start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def test_without_the_stagger_each_simultaneous_request_writes_the_prefix(proxy):
    fake = TimedCacheAPI(ttft_write_s=0.3, ttft_read_s=0.02)
    try:
        fan_out(proxy(fake.url, enabled=False).url, 5)
        assert fake.prefix_writes == 5
    finally:
        fake.close()


def test_with_the_stagger_one_writes_and_the_others_read(proxy):
    fake = TimedCacheAPI(ttft_write_s=0.3, ttft_read_s=0.02)
    try:
        server = proxy(fake.url)
        times = fan_out(server.url, 5)
        assert fake.prefix_writes == 1
        reads = [e["usage"]["cache_read_input_tokens"] for e in fake.log]
        assert sorted(r > 0 for r in reads) == [False] + [True] * 4
        st = server.proxy.stagger.stats
        assert st["held"] == 4 and st["released_by_stream"] == 4 and st["released_by_timeout"] == 0
        assert max(times) < 3.0
        # A later, different prefix (another model: another cache) leads again; nothing stays held.
        fan_out(server.url, 2, model="claude-sonnet-4-5")
        assert fake.prefix_writes == 2 and not server.proxy.stagger._leaders
    finally:
        fake.close()


def test_the_wait_is_bounded(proxy):
    fake = TimedCacheAPI(ttft_write_s=1.5, ttft_read_s=0.0)
    try:
        server = proxy(fake.url, max_wait_ms=200)
        t0 = time.monotonic()
        fan_out(server.url, 3)
        assert time.monotonic() - t0 < 1.5 + 1.0       # followers went after 200 ms, not after the leader
        assert server.proxy.stagger.stats["released_by_timeout"] == 2
        assert fake.prefix_writes == 3                # they paid their writes: bounded, never a deadlock
    finally:
        fake.close()


def test_the_switch_turns_it_off(monkeypatch):
    from capsule.route.stagger import settings_from

    assert settings_from({}).enabled
    assert not settings_from({}, env={"JACKIN_CTX_NO_STAGGER": "1"}).enabled
    assert not settings_from({"enabled": False}, env={}).enabled
