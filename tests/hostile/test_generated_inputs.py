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
    assert engine.archive.get(out.handle) == raw                         # exact expand


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
