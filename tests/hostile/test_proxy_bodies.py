"""Hostile request bodies at the proxy door (issue 24): a client that disconnects mid-body forwards
nothing; a body over the byte cap is refused (413, the API's shape) before it is held whole; a body
nested past any parser's limit is forwarded untouched; engine work past the request's time budget
sends the results as they came, and keeps sending them so (byte-stable); one conversation's long
engine work does not hold another conversation's request."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx2
import pytest

from capsule.proxy.app import Settings
from capsule.proxy.proxy_server import ProxyServer
from test_proxy_target import Recorder

LOG = "".join(f"2026-01-01 10:00:{i % 60:02d} INFO worker {i} step ok\n" for i in range(400))


def _body(result: str, session: str, tool_id: str = "toolu_1") -> bytes:
    return json.dumps({"model": "claude-x", "metadata": {"user_id": json.dumps({"session_id": session})},
                       "messages": [{"role": "user", "content": "read it"},
                                    {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id,
                                                                       "name": "Read", "input": {"file_path": "/w/a"}}]},
                                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                                  "content": result}]}]}).encode()


def _many(results: list[str], session: str) -> bytes:
    messages = [{"role": "user", "content": "read them"}]
    for k, result in enumerate(results):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "Read",
                                                        "input": {"file_path": f"/w/a{k}"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                                   "content": result}]}]
    return json.dumps({"model": "claude-x", "metadata": {"user_id": json.dumps({"session_id": session})},
                       "messages": messages}).encode()


@pytest.fixture
def up():
    rec = Recorder()
    yield rec
    rec.close()


def _proxy(state_dir, up, **kw):
    return ProxyServer(Settings(state_dir=state_dir, anthropic_upstream=up.url, **kw)).start()


def _post(proxy, body: bytes, **kw):
    return httpx2.post(proxy.url + "/v1/messages", content=body, headers={"content-type": "application/json"},
                       timeout=120, **kw)


def test_a_client_that_disconnects_mid_body_forwards_nothing(state_dir, up):
    proxy = _proxy(state_dir, up)
    try:
        body = _body(LOG, "s-gone")
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(f"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                      f"content-length: {len(body)}\r\n\r\n".encode() + body[: len(body) // 2])
            time.sleep(0.3)
        time.sleep(1.0)
        assert up.seen == []
        assert proxy.proxy.stats["client_gone"] == 1
        assert _post(proxy, body).status_code == 200 and len(up.seen) == 1     # a whole one still goes
    finally:
        proxy.stop()


def test_a_body_over_the_cap_is_refused_in_the_apis_shape(state_dir, up, monkeypatch):
    monkeypatch.setenv("JACKIN_CTX_PROXY_MAX_REQUEST_BYTES", str(1 << 20))
    proxy = _proxy(state_dir, up)
    try:
        big = _body("x" * (2 << 20), "s-big")
        r = _post(proxy, big)
        assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large", r.text

        def chunks():      # no Content-Length: the cap is met while reading
            for i in range(0, len(big), 65536):
                yield big[i:i + 65536]

        r = _post(proxy, chunks())
        assert r.status_code == 413
        assert up.seen == []
    finally:
        proxy.stop()


def test_a_body_nested_past_the_parsers_limits_is_forwarded_untouched(state_dir, up):
    proxy = _proxy(state_dir, up)
    try:
        plain = _body(LOG, "s-deep")
        nest = '{"k":' * 1500 + "0" + "}" * 1500          # past orjson's 1,024 and Python's recursion limit
        raw = plain[:-1] + b', "nest": ' + nest.encode() + b"}"
        r = _post(proxy, raw)
        assert r.status_code == 200, r.text
        assert up.last_body == raw and len(up.seen) == 1
    finally:
        proxy.stop()


def test_engine_work_past_the_budget_sends_the_results_as_they_came_and_keeps_them_so(state_dir, up):
    body = _body(LOG, "s-slow")
    proxy = _proxy(state_dir, up, engine_budget_ms=1)
    seen = []
    try:
        for _ in range(2):
            r = _post(proxy, body)
            assert r.status_code == 200
            seen.append(up.last_body)
            time.sleep(1.0)           # the abandoned engine work has finished by now
        assert proxy.proxy.stats["over_budget"] >= 1
    finally:
        proxy.stop()
    assert seen[0] == seen[1] == body     # raw, and raw for good: the prompt cache keeps hitting
    fast = _proxy(state_dir, up)
    try:
        assert _post(fast, _body(LOG, "s-fast")).status_code == 200
        assert len(up.last_body) < len(body)      # with time, the same result is rewritten
    finally:
        fast.stop()


def test_one_conversations_long_engine_work_does_not_hold_anothers_request(state_dir, up):
    slow = "".join(   # ~4 MB of a log no rule was written for: seconds of engine work
        f"2026-03-0{1 + i % 9}T{i % 24:02d}:{i % 60:02d}:{i * 7 % 60:02d}.{i * 13 % 1000:03d}Z "
        f"{['INFO', 'DEBUG', 'WARN'][i % 3]} svc-{i * 31 % 97} req={i * 2654435761 % 10**9:09d} "
        f"path=/api/v{i % 3}/items/{i * 17 % 5000} took={i * 37 % 900}ms user=u{i * 11 % 313}\n" for i in range(36000))
    proxy = _proxy(state_dir, up)
    done: dict[str, float] = {}
    try:
        assert _post(proxy, _body(LOG, "s-warm", "toolu_w")).status_code == 200    # the engine's imports

        def a():   # four results of its own: seconds of engine work in one request, whatever one costs
            _post(proxy, _many([slow.replace("svc-", f"svc{k}-") for k in range(4)], "conv-A"))
            done["A"] = time.monotonic()

        th = threading.Thread(target=a)
        th.start()
        time.sleep(0.8)
        r = _post(proxy, _body(LOG.replace("worker", "job"), "conv-B", "toolu_b"))
        done["B"] = time.monotonic()
        assert r.status_code == 200
        th.join(timeout=300)
    finally:
        proxy.stop()
    assert "A" in done and done["B"] < done["A"], done     # B did not wait for A's engine work
