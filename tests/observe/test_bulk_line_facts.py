"""The bulk (whole-text) forms of per-line facts give exactly the per-line answers (issue 11, warm
observe speed): verbatim class, keep's line shapes, the log filter's digit-normalised texts and
shapes, and the places a repeated block can start. Generated lines mix real tool words, line starts,
digits, whitespace of every kind and non-ASCII text (case folding and digits differ there)."""

from __future__ import annotations

import re

from hypothesis import example, given, settings, strategies as st

from capsule.observe import anomalies, digits, verbatim
from capsule.observe.filters.stages import Line, Run, _block_starts, collapse_periodic
from capsule.observe.filters.traceback import LineFacts, shape

WORDS = re.findall(r"[a-zA-Z][a-zA-Z'! -]*[a-zA-Z!:]|cve-\d+", verbatim._VERBATIM.pattern)
PIECES = st.one_of(
    st.sampled_from(WORDS + ["left:", "right:", "Error", "Exception", "E  ", "FAIL", "---", "+++", "> 3 |",
                             "-->", "0 errors", "2 failed", "worker-7", "0x1f3a", "deadbeef12", "١٢٣",
                             "K", "İ", "ſ", "\t", "\u00a0", "\x1c", "\u2028", "\r", " E ", "INFO", "12:30:01",
                             "échec", "falló", "ſegmentation fault", "\u212ailled", "ERRORİ", "\x00", "7\x00 8",
                             "\udc80", "\ud83d\ude00", "1 errors", "10 failed", "errors: 0", "failed: 10",
                             "> 12 | x", "cve-2024-1", "E0101 ", "0", "9"]),
    st.text(max_size=10))
LINES = st.lists(st.lists(PIECES, max_size=8).map("".join), max_size=40)
SETTINGS = settings(max_examples=400, deadline=None, derandomize=True, database=None)


@SETTINGS
@given(lines=LINES, upper=st.booleans())
def test_verbatim_flags_are_is_verbatim_line_by_line(lines, upper):
    lines = [ln.upper() for ln in lines] if upper else lines
    assert verbatim.verbatim_flags(lines) == [verbatim.is_verbatim(ln) for ln in lines]


TRICKY = ["--- a", "---", "+++\tb", "  -+- x", "-- x", "+ x", "- x", "E  x", "E   ", "  E foo", "\tE\tbar", "FAIL: x", "FAILED", "--- a/x", "+++ b/x", "  > 3 | x", "--> src",
          "ſegmentation fault", "\u212ailled", "échec", "falló", "ERRORİ", "0 errors", "0 errors, 2 failed", "ok",
          "", "   ", "\u00a0", "Error", "no error here", "timeout", "E", "-", "+x", ">", "\x1cE  x", "\u2028E  x"]


def test_verbatim_flags_on_each_kind_of_line_start():
    for shift in range(len(TRICKY)):
        lines = TRICKY[shift:] + TRICKY[:shift]
        assert verbatim.verbatim_flags(lines) == [verbatim.is_verbatim(ln) for ln in lines]
    assert sum(verbatim.verbatim_flags(TRICKY)) >= 15


@SETTINGS
@given(lines=LINES)
def test_keep_shapes_are_the_per_line_shapes(lines):
    lines = [ln.replace("\n", " ") for ln in lines]       # keep's lines come from split("\n")
    assert anomalies._shapes(lines) == [anomalies._shape(ln) for ln in lines]


@SETTINGS
@given(lines=LINES)
def test_line_facts_are_the_per_line_answers(lines):
    rows = [Line(i + 1, t, pinned=i % 5 == 4) for i, t in enumerate(lines)]
    known = {lines[0]: verbatim.is_verbatim(lines[0])} if lines else {}
    facts = LineFacts(rows, known)
    more = rows + [Line(0, "[12 similar lines: a 1 b]"), Line(0, "x 9\nerror 3")]
    assert facts.shapes(more) == [shape(row.text) for row in more]
    assert facts.kept_all(more) == [row.pinned or verbatim.is_verbatim(row.text) for row in more]
    # keep's masks of the same lines are used; masks of other lines (an ANSI code or a redraw
    # changed the texts after keep's analysis) are not
    masks = digits.masked(lines)
    if masks is not None:
        other = [t + " 7" for t in lines]
        for known_masked in ((tuple(lines), tuple(masks)), (tuple(other), tuple(digits.masked(other)))):
            assert LineFacts(rows, known, known_masked).shapes(more) == [shape(row.text) for row in more]
    for row in rows + [Line(0, "[12 similar lines: a 1 b]"), Line(0, "x 9\nerror 3")]:
        assert facts.numbered(row.text) == re.sub(r"\d+", "#", row.text)
        assert facts.shapes([row]) == [" ".join(re.findall(r"\S+", re.sub(r"\d+", "#", row.text))[:5])]
        assert facts.shapes([row]) == [shape(row.text)]
        assert facts.kept(row) == (row.pinned or verbatim.is_verbatim(row.text))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(keys=st.lists(st.sampled_from("abc"), max_size=60), max_period=st.integers(2, 8), reach=st.integers(2, 4),
       min_reps=st.integers(2, 4))
@example(keys=list("ababab") + ["c"] * 10, max_period=3, reach=2, min_reps=3)
@example(keys=list("cabcabcabcab") + ["b"] * 6, max_period=4, reach=3, min_reps=4)
def test_a_block_starts_only_where_block_starts_says(keys, max_period, reach, min_reps):
    starts = set(_block_starts(keys, max_period, reach, min_reps))
    n = len(keys)
    for i in range(n):
        for p in range(2, max_period + 1):
            copies = [keys[i + k * p:i + (k + 1) * p] for k in range(min_reps)]
            if i + reach * p <= n and all(c == copies[0] for c in copies) and len(copies[-1]) == p:
                assert i in starts, (i, p)


def test_collapse_periodic_keeps_its_output_with_the_skip():
    # a block of 3 lines repeated 5 times between unrepeated lines, numbers changing
    texts = ["start"] + [f"{w} {k}" for k in range(5) for w in ("GET /a", "GET /b", "done")] + ["end", "end"]
    lines = [Line(i + 1, t) for i, t in enumerate(texts)]
    run = Run()
    out = collapse_periodic(lines, 6, run, keys=[re.sub(r"\d+", "#", t) for t in texts], min_reps=4, keep_last=True)
    assert [ln.text for ln in out] == ["start", "GET /a 0", "GET /b 0", "done 0",
                                       "[9 more lines L5-13 like 'GET /a <n> ⏎ GET /b <n> ⏎ done <n>']",
                                       "GET /a 4", "GET /b 4", "done 4", "end", "end"]
    assert sum(r.count for r in run.removals) == 9


@SETTINGS
@given(steps=st.lists(st.sampled_from([1, 1, 1, 2, 0, -3]), max_size=60),
       prior=st.sampled_from([None, ("x", 3), ("x", 0), ("y", 3)]))
def test_drop_many_is_drop_line_by_line(steps, prior):
    rows, no = [], 3
    for step in steps:        # mostly consecutive line numbers, some gaps, synthesised lines (0)
        no = max(1, no + step)
        rows.append(Line(no if step else 0, f"t{no}"))
    one, many = Run(), Run()
    if prior:
        for run in (one, many):
            run.drop(Line(prior[1], "before"), prior[0])
    for row in rows:
        one.drop(row, "x")
    many.drop_many(rows, "x")
    assert many.removals == one.removals


def _numeric_reference(values) -> bool:
    return all(re.match(r"^-?\d+(?:\.\d+)?$", v) for v in values)


@SETTINGS
@given(values=st.lists(st.one_of(st.sampled_from(["1", "-2", "3.5", "0.0", "١٢", "1.", ".5", "--1", "7e3", "12x"]),
                                  st.text(alphabet="-.0123456789", max_size=5)), max_size=12))
def test_numbers_is_each_value_a_number(values):
    assert anomalies._numbers(values) == _numeric_reference(values)


def _outliers_reference(idx, tokens, width):
    """The rule as first written: per column, skip a constant or ordered column; a rare value of a
    dominated categorical column, or a numeric outlier far above the median, stands out."""
    import statistics

    out = set()
    total = len(idx)
    for pos in range(width):
        column = [tokens[i][pos] for i in idx]
        values = set(column)
        numeric = _numeric_reference(column)
        seq = [float(v) for v in column] if numeric else column
        if len(values) == 1 or all(a <= b for a, b in zip(seq, seq[1:])):
            continue
        top = max(column.count(v) for v in values)
        if len(values) <= anomalies.CATEGORICAL and top >= anomalies.DOMINANT * total:
            rare = {v for v in values if anomalies.is_rare(column.count(v), total)}
            out |= {i for i in idx if tokens[i][pos] in rare}
        elif numeric:
            med = statistics.median(seq)
            spread = statistics.median(abs(x - med) for x in seq)
            bar = max(anomalies.OUTLIER_FACTOR * abs(med), med + anomalies.OUTLIER_FACTOR * spread, 1.0)
            high = [i for i, x in zip(idx, seq) if x > bar]
            if anomalies.is_rare(len(high), total):
                out |= set(high)
    return out


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(rows=st.integers(4, 120), seed=st.integers(0, 10 ** 6), kinds=st.lists(
    st.sampled_from(["const", "clock", "status", "id", "word", "level", "num", "spike", "codes", "signed", "small"]),
    min_size=1, max_size=5))
def test_field_outliers_follow_the_rule(rows, seed, kinds):
    import random

    r = random.Random(seed)
    columns = {"const": lambda i: "GET", "clock": lambda i: f"{i:05d}", "id": lambda i: f"/items/{r.randrange(10 ** 6)}",
               "status": lambda i: r.choice(["200"] * 30 + ["500", "404"]), "word": lambda i: r.choice("ab"),
               "level": lambda i: r.choice(["INFO"] * 40 + ["WARN", "ERROR", "DEBUG"]),
               "num": lambda i: str(r.randrange(50)), "spike": lambda i: str(r.choice([5] * 60 + [9000])),
               # numbers within 10x of each other (no outlier can pass the bar), negatives, fractions
               "codes": lambda i: r.choice(["200", "201", "204", "304"]),
               "signed": lambda i: r.choice(["-3", "-40", "2", "7", "-900", "0"]),
               "small": lambda i: r.choice(["0.2", "0.9", "1", "0.5", "12.5"])}
    tokens = [[columns[k](i) for k in kinds] for i in range(rows)]
    idx = list(range(rows))
    lines = [" ".join(t) for t in tokens]
    assert anomalies._field_outliers(idx, anomalies._columns(lines, idx, len(kinds))) == _outliers_reference(idx, tokens, len(kinds))


@SETTINGS
@given(lines=LINES, data=st.data())
def test_columns_are_the_per_line_tokens_transposed(lines, data):
    """anomalies._columns (one split of a template's lines joined, read by stride) gives each column of
    the lines' own tokens (str.split, at most MAX_TOKENS), whitespace of every kind included."""
    lines = [ln.replace("\n", " ") for ln in lines] + ["a b " * 9, "\u00a0x\ty\x1cz\u2028w"]
    by_width: dict[int, list[int]] = {}
    for i, ln in enumerate(lines):
        by_width.setdefault(len(anomalies._tokens(ln)), []).append(i)
    for width, idx in by_width.items():
        idx = data.draw(st.lists(st.sampled_from(idx), min_size=1, unique=True)) if width else idx
        expected = [tuple(anomalies._tokens(lines[i])[k] for i in idx) for k in range(width)]
        assert [tuple(c) for c in anomalies._columns(lines, idx, width)] == expected


LEVEL_PIECES = st.one_of(
    st.sampled_from(["INFO", "WARN", "WARNING", "ERROR", "ERR", "E1234 ", "I0101 ", "W9 ", "F0000 ", "D12345",
                     "-", "_", "x", "é", " ", "\t", "[", "]", "=", "xINFO", "INFO-", "ERRORS", "CRIT", "FATAL",
                     "SEVERE", "TRACE", "É", "٣", "ERRİ"]),
    st.text(max_size=6))



def _levels_reference(lines):
    """The level rule as first written: each line's level is _LEVEL's in its first 120 characters;
    the lines above the commonest level (a tie: the one seen first) stand out when rare."""
    from collections import Counter

    ranks = {}
    for i, ln in enumerate(lines):
        m = anomalies._LEVEL.search(ln[:120])
        if m:
            ranks[i] = anomalies._RANK[m.group(1) or m.group(2)]
    if len(ranks) < anomalies.MIN_GROUP:
        return set()
    dominant = Counter(ranks.values()).most_common(1)[0][0]
    above = {i for i, r in ranks.items() if r > dominant}
    return above if anomalies.is_rare(len(above), len(ranks)) else set()


@SETTINGS
@given(lines=st.lists(st.lists(LEVEL_PIECES, max_size=10).map("".join), max_size=40), pad=st.integers(0, 130),
       common=st.sampled_from(["", "2026-03-01 INFO served", "E0101 12:00 boom", "WARN slow 12ms", "DEBUG x"]),
       copies=st.integers(0, 120))
def test_levels_are_the_level_rule_line_by_line(lines, pad, common, copies):
    """anomalies._levels (a two-part search once per distinct digit-masked line, lines counted by
    those) keeps the lines the rule line by line keeps; and level_rank is _LEVEL's level."""
    lines = [" " * (pad if i % 3 == 0 else 0) + ln for i, ln in enumerate(lines)]
    lines = lines + [common.replace("12", str(k)) for k in range(copies)] if common else lines
    for ln in lines:
        m = anomalies._LEVEL.search(ln[:120])
        assert anomalies.level_rank(ln[:120]) == (anomalies._RANK[m.group(1) or m.group(2)] if m else None)
    for order in (lines, lines[::-1]):
        assert anomalies._levels(order) == _levels_reference(order)



def test_levels_tie_goes_to_the_level_seen_first():
    """Two levels as common as each other: the one the log shows first is the dominant one (the
    rule's Counter.most_common), so the other level's lines are not rare and none stands out;
    read the other way round, only the error line ranks above the dominant warnings."""
    lines = [f"INFO req {k}" for k in range(20)] + [f"WARN slow {k}" for k in range(20)] + ["ERROR boom"]
    assert anomalies._levels(lines) == _levels_reference(lines) == set()
    flipped = lines[::-1]
    assert anomalies._levels(flipped) == _levels_reference(flipped) == {0}

@SETTINGS
@given(lines=st.lists(st.sampled_from(["a", "", "\r", "x\r", "50%\r100%", "a\rb\r", "\r\r", "E  boom", " 3 \r"]),
                      max_size=30),
       pinned=st.sets(st.integers(0, 32)), before=st.integers(0, 3))
def test_feed_lines_is_feed_line_line_by_line(lines, pinned, before):
    """PythonRunFilter.feed_lines builds the Lines feed_line would, one call per line (numbers,
    progress redraws, pins), also after lines fed one by one."""
    from capsule.observe.filters.traceback import PythonRunFilter

    one, bulk = PythonRunFilter(), PythonRunFilter()
    for flt in (one, bulk):
        flt.pinned = frozenset(pinned)
        for _ in range(before):
            flt.lineno += 1
            flt.feed_line("first")
    for text in lines:
        one.lineno += 1
        one.feed_line(text)
    bulk.feed_lines(lines)
    assert (bulk.lines, bulk.lineno) == (one.lines, one.lineno)
