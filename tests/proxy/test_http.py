"""The proxy over real HTTP: passthrough, fail open, usage rows, memo across restarts, no credentials kept."""

from __future__ import annotations

import json
import socket
import time

import httpx2
import pytest

from capsule.measure.usage import UsageStore
from capsule.proxy import rewrite
from recording import ANTHROPIC_USAGE, OPENAI_USAGE, Canned, ScriptedMessages

KEY = "sk-ant-test-SECRET-0123456789"
LOG = "\n".join(f"2026-01-01 10:00:{i % 60:02d} INFO worker {i} step ok" for i in range(300)) + \
      "\n2026-01-01 10:05:00 ERROR worker 300 failed: disk full\n"


def _body(result: str, session: str = "sess-1") -> dict:
    return {"model": "claude-x", "stream": False, "metadata": {"user_id": json.dumps({"session_id": session})},
            "messages": [
                {"role": "user", "content": "check the log"},
                {"role": "assistant", "content": [{"type": "text", "text": "Looking for errors in the log."},
                                                  {"type": "tool_use", "id": "toolu_a", "name": "Read",
                                                   "input": {"file_path": "/w/app.log"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": result}]}]}


def usage_rows(state_dir, at_least: int = 1, wait_s: float = 10.0) -> list[dict]:
    """The usage rows, waiting for `at_least` of them: a response with a Content-Length is complete
    for the client at its last byte, which can come before the proxy has written the row."""
    deadline = time.monotonic() + wait_s
    rows = _usage_rows(state_dir)
    while len(rows) < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
        rows = _usage_rows(state_dir)
    return rows


def _usage_rows(state_dir) -> list[dict]:
    if not (state_dir / "usage.db").exists():
        return []
    store = UsageStore(state_dir / "usage.db")
    try:
        names = ["agent", "call_id", "session_id", "model", "input_tokens", "cache_read_input_tokens",
                 "cache_creation_5m", "cache_creation_1h", "output_tokens", "cost_usd", "source"]
        rows = store.conn.execute(f"SELECT {', '.join(names)} FROM calls ORDER BY ts").fetchall()
        return [dict(zip(names, r)) for r in rows]
    finally:
        store.close()


def _post(url, body, path="/v1/messages", **kw):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(url + path, content=data, headers={"x-api-key": KEY, "content-type": "application/json",
                                                          **kw.pop("headers", {})}, timeout=30, **kw)


@pytest.fixture
def canned():
    made = []

    def make(*a, **kw):
        c = Canned(*a, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def test_tool_result_is_shrunk_error_line_kept_and_usage_recorded(proxy_for, state_dir):
    fake = ScriptedMessages([])
    try:
        proxy = proxy_for(anthropic=fake.url)
        r = _post(proxy.url, _body(LOG))
        assert r.status_code == 200 and r.json()["usage"] == ANTHROPIC_USAGE
        sent = json.loads(fake.raw[-1][2])["messages"][2]["content"][0]["content"]
        assert len(sent) < len(LOG) / 3
        assert "2026-01-01 10:05:00 ERROR worker 300 failed: disk full" in sent
        assert "<<ccr:" in sent
        assert fake.raw[-1][1]["x-api-key"] == KEY                   # credentials pass through
        rows = usage_rows(state_dir)
        assert len(rows) == 1
        row = rows[0]
        assert (row["input_tokens"], row["cache_creation_5m"], row["cache_read_input_tokens"], row["output_tokens"]) == \
            (1234, 567, 8910, 42)
        assert (row["session_id"], row["agent"], row["source"], row["call_id"]) == ("sess-1", "claude", "proxy", "msg_1")
    finally:
        fake.close()


def test_streaming_usage_and_bytes_pass_through(proxy_for, state_dir):
    fake = ScriptedMessages([])
    try:
        proxy = proxy_for(anthropic=fake.url)
        body = {**_body("tiny"), "stream": True}
        direct = _post(fake.url, body).content
        via = _post(proxy.url, body).content
        assert via.replace(b'"msg_2"', b'"msg_1"') == direct       # byte-identical SSE, ids aside
        row = usage_rows(state_dir)[-1]
        assert (row["input_tokens"], row["cache_creation_5m"], row["cache_read_input_tokens"], row["output_tokens"]) == \
            (1234, 567, 8910, 42)
    finally:
        fake.close()


def test_openai_usage_buckets(proxy_for, state_dir):
    from tests.fakes.openai import ResponsesAPI

    fake = ResponsesAPI(usage=OPENAI_USAGE)
    try:
        proxy = proxy_for(openai=fake.base_url)
        r = _post(proxy.openai_url, {"model": "gpt", "prompt_cache_key": "th-9", "input": []}, path="/responses")
        assert r.status_code == 200 and b"response.completed" in r.content
        row = usage_rows(state_dir)[-1]
        assert (row["input_tokens"], row["cache_read_input_tokens"], row["cache_creation_5m"], row["output_tokens"]) == \
            (5000 - 3072, 3072, 0, 77)
        assert (row["session_id"], row["agent"], row["call_id"]) == ("th-9", "codex", "resp_1")
    finally:
        fake.close()


def test_upstream_errors_and_odd_bodies_pass_verbatim(proxy_for, canned):
    up = canned(529, [("content-type", "application/json"), ("retry-after", "7"), ("x-odd", "kept")],
                [b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'])
    proxy = proxy_for(anthropic=up.url)
    r = _post(proxy.url, _body(LOG))
    assert r.status_code == 529 and r.headers["retry-after"] == "7" and r.headers["x-odd"] == "kept"
    assert r.content == up.chunks[0]
    for odd in (b"not json at all", b"[1,2,3]", b'{"messages": "x"}', json.dumps(_body(LOG)).encode()[:-5]):
        _post(proxy.url, odd)
        assert up.seen[-1][3] == odd
    _post(proxy.url, b"\x1f\x8b compressed", headers={"content-encoding": "gzip"})
    assert up.seen[-1][3] == b"\x1f\x8b compressed"
    r = httpx2.get(proxy.url + "/v1/models?limit=3", headers={"x-api-key": KEY})
    assert up.seen[-1][:2] == ("GET", "/v1/models?limit=3") and up.seen[-1][2]["x-api-key"] == KEY


def test_oversized_body_is_forwarded_untouched(proxy_for, canned, monkeypatch):
    up = canned(200, [("content-type", "application/json")], [b"{}"])
    proxy = proxy_for(anthropic=up.url)
    monkeypatch.setitem(rewrite.config()["limits"], "max_body_bytes", 1000)
    sent = json.dumps(_body(LOG)).encode()
    _post(proxy.url, sent)
    assert up.seen[-1][3] == sent


def test_engine_fault_forwards_the_original_bytes(proxy_for, canned, monkeypatch):
    up = canned(200, [("content-type", "application/json")], [b"{}"])
    proxy = proxy_for(anthropic=up.url)
    monkeypatch.setenv("JACKIN_CTX_FAULT_INJECT", "*")
    sent = json.dumps(_body(LOG)).encode()
    assert _post(proxy.url, sent).status_code == 200
    assert up.seen[-1][3] == sent


def test_unreachable_upstream_is_a_502_in_the_api_shape(proxy_for):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    proxy = proxy_for(anthropic=f"http://127.0.0.1:{dead}")
    r = _post(proxy.url, _body("x"))
    assert r.status_code == 502 and r.json()["type"] == "error"


def test_memo_survives_a_restart_and_no_credential_is_written(proxy_for, state_dir, canned):
    up = canned(200, [("content-type", "application/json")], [b"{}"])
    first = proxy_for(anthropic=up.url)
    _post(first.url, _body(LOG))
    shrunk = up.seen[-1][3]
    first.stop()
    # A restarted proxy in measure mode would send the block raw; the memo keeps the first bytes (INV-1).
    again = proxy_for(anthropic=up.url, mode="measure")
    _post(again.url, _body(LOG))
    assert up.seen[-1][3] == shrunk
    _post(again.url, _body(LOG, session="other-conversation"))
    assert json.loads(up.seen[-1][3])["messages"][2]["content"][0]["content"] == LOG   # new scope: measure = raw
    for f in state_dir.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f


def test_gzip_answer_is_forwarded_compressed_and_its_usage_still_read(proxy_for, canned, state_dir):
    import gzip

    answer = {"id": "msg_gz", "type": "message", "model": "claude-x", "content": [],
              "usage": {"input_tokens": 7, "cache_read_input_tokens": 70, "output_tokens": 3,
                        "cache_creation_input_tokens": 9,
                        "cache_creation": {"ephemeral_5m_input_tokens": 4, "ephemeral_1h_input_tokens": 5}}}
    packed = gzip.compress(json.dumps(answer).encode())
    up = canned(200, [("content-type", "application/json"), ("content-encoding", "gzip")], [packed])
    proxy = proxy_for(anthropic=up.url)
    with httpx2.Client() as client:
        r = client.post(proxy.url + "/v1/messages", content=json.dumps(_body("x")).encode(),
                        headers={"x-api-key": KEY, "accept-encoding": "gzip"})
        assert r.json() == answer and r.headers["content-encoding"] == "gzip"
    row = usage_rows(state_dir)[-1]
    assert (row["call_id"], row["input_tokens"], row["cache_read_input_tokens"], row["cache_creation_5m"],
            row["cache_creation_1h"], row["output_tokens"]) == ("msg_gz", 7, 70, 4, 5, 3)
