"""Counting the raw input's tokens is off the agent's path (issue 11, Speed): the guard decides on a
cheap floor, the exact count and the ledger row come after the output, with the same figures."""

from __future__ import annotations

import random

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.measure.ledger import Ledger
from capsule.observe import pipeline, registry
from capsule.observe.classify import classify
from capsule.observe.transform_types import Context, Removal, TransformResult
from capsule.ground.types import Observation


def _log(n: int = 1500, seed: int = 3) -> bytes:
    r = random.Random(seed)
    lines = [f"2026-03-01T12:{i // 60 % 60:02d}:{i % 60:02d}Z INFO worker-{r.randrange(8)} GET /api/items/"
             f"{r.randrange(10 ** 6)} status=200 took={r.randrange(500)}ms" for i in range(n)]
    lines.insert(700, "2026-03-01T12:11:40Z ERROR worker-2 GET /api/items/77 failed: connection refused")
    return ("\n".join(lines) + "\n").encode()


def _row(ledger: Ledger, emission_id: int) -> dict:
    row = dict(ledger.get(emission_id))
    for volatile in ("id", "ts", "created_at", "elapsed_ms", "duration_ms"):
        row.pop(volatile, None)
    return row


def test_the_floor_never_exceeds_the_exact_count():
    r = random.Random(11)
    samples = ["a" * 30000, "hello world " * 3000, "x\x0by\x0c " * 2000, bytes(range(256)).decode("latin-1") * 60,
               _log(300).decode(), "".join(chr(r.randrange(32, 0x3000)) for _ in range(20000)),
               (b"\xff\xfe ok " * 3000).decode("utf-8", "surrogateescape"), " " * 10000 + "\n" * 10000]
    for text in samples:
        assert tokens.at_least(text) <= tokens.count(text), text[:40]


def test_observe_does_not_count_the_raw_input_before_returning(state_dir, monkeypatch):
    raw = _log()
    engine = Engine(state_dir)
    engine.defer = True
    counted: list[int] = []
    real = tokens.count
    monkeypatch.setattr(tokens, "count", lambda text, **kw: counted.append(len(text)) or real(text, **kw))
    out = engine.observe(Observation(raw, command="kubectl logs deploy/api", exit_code=0))
    assert len(out.data) < len(raw) // 3 and b"connection refused" in out.data
    assert max(counted) < len(raw) // 3          # only the (small) emission was counted
    assert out.emission_id is None               # not recorded yet
    engine.drain()
    assert max(counted) == len(raw)              # counted after, once
    assert counted.count(len(raw)) == 1


def test_deferred_and_immediate_ledger_rows_are_the_same(tmp_path, monkeypatch):
    raw = _log()
    rows = []
    for defer in (False, True):
        engine = Engine(tmp_path / f"state-{defer}", scope="s")
        engine.defer = defer
        engine.observe(Observation(raw, command="kubectl logs deploy/api", exit_code=0))
        engine.observe(Observation(raw[:300], command="kubectl logs deploy/api", exit_code=0))   # small: passthrough
        engine.drain()
        ids = [r["id"] for r in engine.ledger.rows()]
        rows.append([_row(engine.ledger, i) for i in ids])
        engine.close()
    assert rows[0] == rows[1]
    assert rows[0][0]["raw_tokens"] == tokens.count_bytes(raw) > rows[0][0]["emitted_tokens"]
    assert rows[0][1]["raw_tokens"] == rows[0][1]["emitted_tokens"] == tokens.count_bytes(raw[:300])


def _first_quarter(text, ctx):
    lines = text.splitlines(keepends=True)
    keep = len(lines) // 4
    return TransformResult("".join(lines[:keep]), "quarter", [Removal("test: beyond a quarter", len(lines) - keep)])


def _everything_twice(text, ctx):
    return TransformResult(text + text[: len(text) // 2], "twice")


def test_when_the_floor_cannot_decide_the_exact_count_does(state_dir):
    """Long hex lines: the floor (words, bytes / longest token) is far below the exact count, so an
    emission above the floor is judged on the exact count: worth it is applied, worse is refused."""
    r = random.Random(5)
    text = "".join(f"{r.getrandbits(800):0200x}\n" for _ in range(80))
    raw = text.encode()
    assert tokens.at_least(text) * 4 < tokens.count(text)
    ctx = Context(command="mystery-tool", stream="stdout", mode="standard")
    registry.register("default", f"{__name__}:_first_quarter")
    try:
        em = pipeline.process(raw, ctx, None, classify("mystery-tool", raw[:1024]))
        assert em.transform_id == "quarter" and em.data != raw
        assert tokens.at_least(text) < em.emitted_tokens < em.raw_tokens == tokens.count(text)
        registry.register("default", f"{__name__}:_everything_twice")
        em = pipeline.process(raw, ctx, None, classify("mystery-tool", raw[:1024]))
        assert em.data == raw and em.emitted_tokens == em.raw_tokens == tokens.count(text)
    finally:
        registry.register("default", "capsule.observe.transforms.basic:default_text")


def test_the_longest_token_constant_is_the_encodings():
    enc = tokens._load()
    assert enc is not None, "the offline cl100k encoding must load in tests"
    special = enc.special_tokens_set
    longest = 0
    for t in range(enc.max_token_value + 1):
        try:
            piece = enc.decode_single_token_bytes(t)
        except KeyError:                # an id cl100k leaves unused
            continue
        if piece.decode("utf-8", "replace") not in special:
            longest = max(longest, len(piece))
    assert longest == tokens.LONGEST_TOKEN_BYTES


def test_the_full_text_index_row_of_an_original_waits_for_drain(tmp_path):
    """The original is stored before observe() returns (expand works at once); its search-index
    row, most of a put's cost, is written by drain(). Without defer it is written inline."""
    raw = _log()
    for defer in (True, False):
        engine = Engine(tmp_path / f"state-{defer}")
        engine.defer = defer
        out = engine.observe(Observation(raw, command="kubectl logs deploy/api", exit_code=0))
        assert out.handle and engine.archive.get(out.handle) == raw
        indexed = lambda: engine.archive.conn.execute(  # noqa: E731
            "SELECT count(*) FROM ccr_fts WHERE hash=?", (out.handle,)).fetchone()[0]
        assert indexed() == (0 if defer else 1)
        engine.drain()
        assert indexed() == 1
        engine.observe(Observation(raw, command="kubectl logs deploy/api", exit_code=0))   # stored already: renewed
        engine.drain()
        assert indexed() == 1 and engine.archive.search("refused") == [out.handle]
        engine.close()
