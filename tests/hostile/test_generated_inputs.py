"""Generated hostile inputs through the engine, in-process (issue 11, Done means): 10,000+ inputs in
total across binary, invalid UTF-8, huge lines, deep JSON and ANSI floods. For each: never worse in
tokens, the original back byte-exact from the archive when anything was cut (else the raw bytes
themselves), and bounded time (a generous per-example hypothesis deadline: a hang or a blow-up
fails; speed itself is benchmarks/bench_speed.py's business)."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.observe import verbatim
from capsule.store import redact
from capsule.ground.types import Observation

EXAMPLES = 2000           # per category; five categories
SETTINGS = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=10), derandomize=True,
                    suppress_health_check=list(HealthCheck), database=None)

COMMANDS = [None, "git log --stat -n 40", "pytest -q", "cargo build", "cat data.json", "npm install",
            "kubectl logs deploy/api", "curl -s https://api.example.com/items", "grep -rn def .", "make"]
LINES = [b"error: could not compile `demo`", b"FAILED tests/t.py::test_x - assert 1 == 2", b"ok", b"",
         b"   Compiling demo v0.1.0 (/w)", b"Traceback (most recent call last):", b"INFO worker: rendered 7",
         b"warning: unused variable: `x`", b"test tests::a ... ok", b"diff --git a/x b/x", b"+new", b"-old",
         b"src/a.py:3: error: Incompatible types", b"panic: boom", b"2026-03-01T12:00:00Z INFO GET /a 200"]
ANSI = [b"\x1b[31m", b"\x1b[0m", b"\x1b[1;32m", b"\x1b[2K", b"\r", b"\x1b[?25l", b"\x1b]0;title\x07", b"\x1b[38;5;196m",
        b"\x1b[A", b"\x1b[10D", b"\x1b[", b"\x1b"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    import os

    state = tmp_path_factory.mktemp("state")
    old = os.environ.get("JACKIN_CTX_STATE_DIR")
    os.environ["JACKIN_CTX_STATE_DIR"] = str(state)
    for name in ("JACKIN_CTX_DISABLE", "JACKIN_CTX_MEASURE_ONLY", "JACKIN_CTX_MODE", "JACKIN_CTX_FAULT_INJECT"):
        os.environ.pop(name, None)
    e = Engine(state, scope="generated")
    e.defer = True        # rows recorded in drain(), as the supervisor does
    yield e
    e.close()
    if old is None:
        os.environ.pop("JACKIN_CTX_STATE_DIR", None)
    else:
        os.environ["JACKIN_CTX_STATE_DIR"] = old


def check(engine: Engine, raw: bytes, command: str | None, exit_code: int | None) -> None:
    out = engine.observe(Observation(raw, command=command, exit_code=exit_code))
    engine.drain()
    event("cut (archived)" if out.handle else "raw")
    if out.handle is None:
        assert out.data == raw
        return
    assert tokens.count_bytes(out.data) < tokens.count_bytes(raw)        # never worse (INV-3)
    assert engine.archive.get(out.handle) == redact.redact_bytes(raw)[0]  # exact expand (secrets aside, issue 24)


commands = st.sampled_from(COMMANDS)
codes = st.sampled_from([0, 1, 2, None])


@SETTINGS
@given(raw=st.binary(min_size=1, max_size=6000), command=commands, code=codes)
def test_binary(engine, raw, command, code):
    check(engine, raw, command, code)


@SETTINGS
@given(parts=st.lists(st.one_of(st.sampled_from(LINES), st.binary(max_size=48)), min_size=1, max_size=300),
       command=commands, code=codes)
def test_invalid_utf8(engine, parts, command, code):
    raw = b"\n".join(p + (b"\xff\xfe\xc3" if i % 7 == 3 else b"") for i, p in enumerate(parts)) + b"\n"
    check(engine, raw, command, code)


@SETTINGS
@given(seed=st.binary(min_size=1, max_size=24), repeat=st.integers(100, 12_000),
       around=st.lists(st.sampled_from(LINES), max_size=30), spaces=st.booleans(), command=commands, code=codes)
def test_huge_lines(engine, seed, repeat, around, spaces, command, code):
    line = (seed + b" " if spaces else seed) * repeat
    raw = b"\n".join([*around[: len(around) // 2], line.replace(b"\n", b" "), *around[len(around) // 2:]]) + b"\n"
    check(engine, raw, command, code)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=8), st.dictionaries(st.text(max_size=8), inner, max_size=8)),
    max_leaves=200)


@SETTINGS
@given(depth=st.integers(1, 3000), leaf=json_values, wrap=st.sampled_from(["list", "dict", "mixed"]),
       rows=st.integers(0, 60), pretty=st.booleans(), command=commands)
def test_deep_json(engine, depth, leaf, wrap, rows, pretty, command):
    body = json.dumps(leaf)
    for i in range(depth):
        kind = wrap if wrap != "mixed" else ("list" if i % 2 else "dict")
        body = f"[{body}]" if kind == "list" else f'{{"k{i % 5}": {body}}}'
    if rows:      # a long array beside the deep one, so a reduction has something to take
        body = json.dumps([{"id": i, "name": f"item-{i}", "ok": i % 9 != 4} for i in range(rows * 10)],
                          indent=2 if pretty else None)[:-1] + f", {body}]"
    check(engine, body.encode(), command or "cat data.json", 0)


@SETTINGS
@given(parts=st.lists(st.one_of(st.sampled_from(ANSI), st.sampled_from(LINES)), min_size=1, max_size=2000),
       newline_every=st.integers(1, 50), command=commands, code=codes)
def test_ansi_floods(engine, parts, newline_every, command, code):
    raw = b"".join(p + (b"\n" if i % newline_every == 0 else b"") for i, p in enumerate(parts))
    check(engine, raw, command, code)


def _full_regex(line: str) -> bool:
    if not line.strip():
        return False
    if verbatim._BENIGN.search(line) and not re.search(r"(?i)\b[1-9]\d* (errors?|failed|failures)\b", line):
        return False
    return bool(verbatim._VERBATIM.search(line))


WORDS = re.findall(r"[a-zA-Z][a-zA-Z'! -]*[a-zA-Z!:]|cve-\d+", verbatim._VERBATIM.pattern)


@settings(max_examples=3000, deadline=None, derandomize=True, database=None)
@given(parts=st.lists(st.one_of(st.sampled_from(WORDS + ["left:", "right:", "Error", "Exception", "E  ", "FAIL",
                                                         "---", "+++", "> 3 |", "-->", "0 errors", "2 failed",
                                                         "--- ", "+++\t", "-+-\x0c", "  --- a", "-- -", "++", "+",
                                                         "-", " >", "E", "e", "fail", "\x1c", "ſ", "\u212a", "ı", "İ",
                                                         "ÉCHEC", "FALLÓ", "│", "é", "\u2028"]),
                                st.text(max_size=12)), max_size=8),
       sep=st.sampled_from([" ", "", "  ", "\t", ":"]), upper=st.booleans())
def test_the_verbatim_fast_path_agrees_with_the_regex(parts, sep, upper):
    line = sep.join(parts)
    line = line.upper() if upper else line
    assert verbatim.is_verbatim(line) == _full_regex(line), line


# ---- issue 24: hostile transcripts and proxy bodies -------------------------------------------------

HOSTILE_NUMBERS = st.one_of(st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True, allow_infinity=True),
                            st.booleans(), st.none(), st.text(max_size=6))
TIMESTAMPS = st.one_of(st.sampled_from(["2026-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
                                        "2026-13-45T99:99:99Z", ""]), json_values)


def _claude_entry(kind, session, ts, cwd, mid, model, usage, cost, tool_name, result):
    return {"type": kind, "sessionId": session, "timestamp": ts, "cwd": cwd, "costUSD": cost, "isSidechain": True,
            "agentId": cwd, "message": {"id": mid, "model": model, "role": "assistant", "usage": usage,
                                        "stop_reason": "end_turn",
                                        "content": [{"type": "tool_use", "id": "toolu_1", "name": tool_name,
                                                     "input": {"command": result}},
                                                    {"type": "tool_result", "tool_use_id": "toolu_1",
                                                     "content": result}]}}


def _codex_entry(kind, session, ts, cwd, mid, model, usage, cost, tool_name, result):
    payloads = {"session_meta": {"id": session, "session_id": mid, "cwd": cwd},
                "turn_context": {"model": model, "cwd": cwd},
                "event_msg": {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage}},
                "response_item": {"type": "function_call", "call_id": mid, "name": tool_name, "arguments": result}}
    return {"type": kind, "timestamp": ts, "payload": payloads.get(kind, {"x": cost})}


USAGE_KEYS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
              "cached_input_tokens", "reasoning_output_tokens", "total_tokens"]


@pytest.fixture(scope="module")
def usage_store(tmp_path_factory):
    from capsule.measure.usage import UsageStore

    store = UsageStore(tmp_path_factory.mktemp("usage") / "usage.db")
    yield store
    store.close()


@settings(max_examples=150, deadline=timedelta(seconds=10), derandomize=True,
          suppress_health_check=list(HealthCheck), database=None)
@given(entries=st.lists(st.tuples(
    st.sampled_from(["assistant", "user", "system", "session_meta", "turn_context", "event_msg", "response_item"]),
    st.one_of(st.just("s-1"), json_values), TIMESTAMPS, json_values, st.one_of(st.just("msg_1"), json_values),
    json_values, st.one_of(st.dictionaries(st.sampled_from(USAGE_KEYS), HOSTILE_NUMBERS, max_size=7), json_values),
    HOSTILE_NUMBERS, json_values, st.one_of(st.text(max_size=40), json_values)), min_size=1, max_size=12),
    junk=st.lists(st.one_of(st.binary(max_size=40), st.integers(1, 3000).map(lambda d: b"[" * d + b"]" * d)),
                  max_size=3))
def test_generated_transcripts_never_break_ingestion(usage_store, entries, junk):
    """Any transcript line: parsed or skipped (counted), never raised; what is stored is finite,
    non-negative and bounded, and reads back as strict JSON."""
    from capsule.measure.transcripts import claude_transcript, codex_transcript
    from capsule.measure.usage import MAX_COUNT, MAX_COST_USD

    for agent, make in (("claude", _claude_entry), ("codex", _codex_entry)):
        lines = [json.dumps(make(*e), allow_nan=True, default=str).encode() for e in entries] + list(junk)
        state: dict = {}
        batch = (claude_transcript if agent == "claude" else codex_transcript).parse(lines, f"gen-{agent}", state)
        usage_store.write(batch)
        json.dumps(state, allow_nan=False)               # the file state is stored as JSON too
    for call in usage_store.calls():
        json.dumps(call, allow_nan=False)
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h",
                    "output_tokens"):
            assert isinstance(call[key], int) and 0 <= call[key] <= MAX_COUNT
        assert call["cost_usd"] is None or 0 <= call["cost_usd"] <= MAX_COST_USD
        assert call["ts"] is None or call["ts"] >= 0
    for table in ("calls", "tools", "sessions"):       # the next example checks its own rows only
        usage_store.conn.execute(f"DELETE FROM {table}")


@pytest.fixture(scope="module")
def proxy_app(tmp_path_factory):
    from capsule.proxy.app import Proxy, Settings

    app = Proxy(Settings(state_dir=tmp_path_factory.mktemp("proxy-state"), mode="standard"))
    yield app
    app.close()


@settings(max_examples=120, deadline=timedelta(seconds=20), derandomize=True,
          suppress_health_check=list(HealthCheck), database=None)
@given(api=st.sampled_from(["anthropic", "openai"]), result=st.one_of(
           st.text(max_size=200), st.lists(st.sampled_from([ln.decode() for ln in LINES]), max_size=400).map("\n".join),
           json_values),
       depth=st.integers(0, 3000), tool=st.one_of(st.sampled_from(["Read", "Bash", "Grep", "exec_command"]),
                                                  json_values),
       cut=st.one_of(st.none(), st.integers(0, 4000)), extra=json_values)
def test_generated_proxy_bodies_pass_or_rewrite_never_fail(proxy_app, api, result, depth, tool, cut, extra):
    """Any request body: the proxy returns the client's own bytes or a rewrite that is valid JSON;
    it never raises (a 500) whatever the shape, depth or truncation."""
    import anyio

    if api == "anthropic":
        body = {"model": "claude-x", "metadata": {"user_id": json.dumps({"session_id": "gen"})}, "extra": extra,
                "messages": [{"role": "user", "content": "go"},
                             {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_g", "name": tool,
                                                                "input": {"file_path": "/w/a", "command": "ls"}}]},
                             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_g",
                                                           "content": result}]}]}
    else:
        body = {"model": "gpt-x", "prompt_cache_key": "gen", "extra": extra,
                "input": [{"type": "function_call", "call_id": "c1", "name": tool, "arguments": "{}"},
                          {"type": "function_call_output", "call_id": "c1", "output": result}]}
    raw = json.dumps(body, default=str).encode()
    if depth:
        raw = raw[:-1] + b', "deep": ' + b"[" * depth + b"]" * depth + b"}"
    if cut is not None:
        raw = raw[:cut]
    out, _ = anyio.run(proxy_app._maybe_rewrite, api, raw, {})
    assert isinstance(out, bytes)
    if out != raw:
        json.loads(out)
