"""JSON crusher: a lossless tier (minify or TOON, proven on the text at run time) and the
choice between it and the lossy tier (json_reduce: structural reduction of any large
collection, every anomaly kept, counts and reasons said).

Not responsible for deciding whether the result is worth emitting (the guard measures tokens)
nor for archiving the original (the pipeline does).
Invariant: a result marked lossless keeps the text: a JSON form has the input's token stream
(every number literal, string, key, duplicate and order), a TOON form decodes to the input
with every number written as in the input; anything else is the lossy tier. The lossy tier
never drops an error-class part (json_anomaly).
"""

from __future__ import annotations

import re
from functools import lru_cache

from capsule.observe.content import json_records, json_reduce, json_text, toon
from capsule.observe.content.json_anomaly import (ERROR_KEY, Sampled, rows_schema, anomalies,  # noqa: F401
                                                  sample, value_anomalies)
from capsule.observe.content.json_reduce import (AGGRESSIVE_MIN_ROWS, LONG_STRING, LONG_STRING_KEEP,  # noqa: F401
                                                 LOSSY_MIN_ROWS, VERBATIM_LINE_MAX, lossy, lossy_forms)
from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "json"
LINE_KEEPING_SLACK = 1.25   # prefer the line-keeping lossless form within this factor of the best
BIG_TEXT = 2 << 20           # from this many characters a small enough sampled form is taken
BIG_SHARE = 0.05             # ...when it is under this share of the raw (tokens ~ chars / 4)

_dec = json_text.DECODER
_DELIM_NAMES = {",": "comma-separated rows", "\t": "tab-separated rows", " ": "space-separated rows"}


def parse(text: str):
    """The parsed JSON value, or raise ValueError. A stream of several top-level values
    (NDJSON, `go list -json`) parses as a _Stream list of them. Numbers keep their source
    text and repeated keys all their values (json_text): lossless is judged on the text."""
    try:
        return json_text.loads(text)
    except ValueError:
        pass
    values, i, n = _Stream(), 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        value, i = _dec.raw_decode(text, i)
        values.append(value)
    if len(values) < 2:
        raise ValueError("not JSON")
    return values


class _Stream(list):
    """Several top-level JSON values one after another."""


def minify(value) -> str:
    """One line, but `"key": value` keeps its space: a few tokens more, and every `"key": value`
    the user or a grep would quote from the pretty original is still found in it."""
    return json_text.dumps(value)


def _lost_verbatim():
    """The pipeline's INV-7 check (an error/warning line of the original must survive as a
    substring); a form that fails it would be refused, so it is never chosen. Distinct
    lines are checked once, by set lookup before any substring search."""
    try:
        from capsule.observe.verbatim import is_verbatim
    except ImportError:
        return lambda original, out: False
    cache: dict[int, set[str]] = {}

    def lost(original: str, out: str) -> bool:
        wanted = cache.get(id(original))
        if wanted is None:
            # A line longer than VERBATIM_LINE_MAX is a serialised document (curl's one-line
            # JSON), not a tool reporting an error; the anomaly rules keep its error rows instead.
            wanted = {ln.strip() for ln in original.split("\n")
                      if len(ln) <= VERBATIM_LINE_MAX and is_verbatim(ln)}
            cache[id(original)] = wanted
        if not wanted:
            return False
        have = {ln.strip() for ln in out.split("\n")}
        return any(w not in have and w not in out for w in wanted)

    return lost


def crush(text: str, ctx: Context) -> TransformResult:
    """Transform entry point: the shortest proven lossless form, unless the lossy tier (large
    collections sampled) is shorter still."""
    try:
        return _crush(text, ctx)
    finally:
        _size.cache_clear()     # a form's count serves one call (the cache holds the forms' texts)


def _crush(text: str, ctx: Context) -> TransformResult:
    try:
        value = parse(text)
    except (ValueError, RecursionError):
        return TransformResult(text, TRANSFORM_ID, notes=["not JSON; left as is"])
    stream = isinstance(value, _Stream)
    value = list(value) if stream else value
    lost = _lost_verbatim()
    min_rows = AGGRESSIVE_MIN_ROWS if ctx.mode == "aggressive" else LOSSY_MIN_ROWS
    if isinstance(value, list) and len(value) >= min_rows:
        # One record a line (an array written so, JSON Lines, a JSON log stream): sampled like
        # pretty JSON, each shown record its own line as written (issue 25: these passed whole).
        lined = json_records.sampled_lines(text, ctx.intent, min_rows)
        # not the line check: it reads `"error": null` on every record as an error line;
        # sampled_lines keeps every record that reports one by its values
        if lined is not None:
            return lined
    if len(text) >= BIG_TEXT:
        # No lossless form of a document this size fits an agent's context; proving each costs
        # seconds per megabyte. A sampled form under BIG_SHARE of the raw is taken directly.
        small = [s for s in lossy_forms(value, ctx.intent, min_rows)
                 if _size(s.text) <= BIG_SHARE * len(text) / 4 and not lost(text, s.text)]
        if small:
            return _pick(small, text, ctx)
    forms = [f for f in lossless_forms(value, text, stream) if not lost(text, f[0])]
    chosen = forms[0] if forms else None
    # A form that keeps every original line (indentation aside) is preferred unless the best
    # re-serialisation saves much more: agents and the must-keep corpus quote JSON lines.
    keeping = [f for f in forms if f[1].startswith("JSON with indentation removed")]
    if chosen is not None and keeping and ctx.mode != "aggressive" and \
            _size(keeping[0][0]) <= _size(chosen[0]) * LINE_KEEPING_SLACK:
        chosen = keeping[0]
    if chosen is None:
        return TransformResult(text, TRANSFORM_ID, notes=["no lossless form kept every error line"])
    trimmed = trim_long_strings(chosen[0])
    best_size = _size(chosen[0])
    if trimmed.removals:
        trimmed_size = _size(trimmed.text)
        if trimmed_size < best_size:
            best_size = trimmed_size
        else:
            trimmed = None
    else:
        trimmed = None
    sampled = [s for s in lossy_forms(value, ctx.intent, min_rows)
               if _size(s.text) < best_size and not lost(text, s.text)]
    if sampled:
        return _pick(sampled, text, ctx)
    if trimmed is not None:
        return trimmed
    body, how = chosen
    if stream:
        how = f"stream of {len(value)} JSON values as one array; " + how
    return TransformResult(body, TRANSFORM_ID, lossless=True, notes=[how])


def _pick(sampled: list[TransformResult], text: str, ctx: Context) -> TransformResult:
    """As for the lossless tier: the JSON rendering keeps `"key": value` lines a reader quotes,
    preferred within LINE_KEEPING_SLACK of the TOON one for a pretty-printed input."""
    lines = [s for s in sampled if json_reduce.JSON_LINES in s.notes]
    if lines and ctx.mode != "aggressive" and "\n" in text.strip() and \
            _size(lines[0].text) <= _size(sampled[0].text) * LINE_KEEPING_SLACK:
        return lines[0]
    return sampled[0]


def trim_long_strings(text: str) -> TransformResult:
    """Cut every JSON string value over LONG_STRING characters to its head, line by line, on a
    one-value-per-line rendering (the dedented original keeps each line as the user saw it).
    Values under an error-like key (error, stderr, traceback…) are never cut."""
    out: list[str] = []
    removals: list[Removal] = []
    for no, line in enumerate(text.split("\n"), 1):
        if len(line) > LONG_STRING:
            cut = _cut_line(line)
            if cut is not None:
                line, key, full = cut
                removals.append(Removal(f"string over {LONG_STRING} chars (key {key or '-'})", 0, no, no,
                                        full[:120]))
        out.append(line)
    return TransformResult("\n".join(out), TRANSFORM_ID, removals,
                           notes=[f"{len(removals)} long strings cut to {LONG_STRING_KEEP} characters"])


_KEY_PREFIX = re.compile(r'^(\s*(?:"((?:[^"\\]|\\.)*)"\s*:\s*)?)"')


def _cut_line(line: str) -> tuple[str, str | None, str] | None:
    m = _KEY_PREFIX.match(line)
    if not m or (m.group(2) and ERROR_KEY.search(m.group(2))):
        return None
    start = m.end()
    end = _string_end(line, start)
    if end is None or end - start <= LONG_STRING:
        return None
    value = line[start:end]
    keep = value[:LONG_STRING_KEEP]
    keep = keep[: len(keep) - (len(keep) - len(keep.rstrip("\\"))) % 2]  # never split an escape
    cut = f'{line[:start]}{keep}…[+{len(value) - len(keep)} chars]{line[end:]}'
    return cut, m.group(2), value


def _string_end(line: str, start: int) -> int | None:
    """Index of the closing quote of the JSON string whose body starts at `start`."""
    i = start
    while True:
        j = line.find('"', i)
        if j < 0:
            return None
        backslashes = len(line[:j]) - len(line[:j].rstrip("\\"))
        if backslashes % 2 == 0:
            return j
        i = j + 1


def lossless_forms(value, original: str | None = None, stream: bool = False) -> list[tuple[str, str]]:
    """Every proven lossless form, shortest first: TOON with each cell delimiter (decodes to
    the input, every number written as in the input), minified JSON and the original's lines
    with indentation stripped (both: the same JSON token stream as the original, so every
    literal is identical; a stream of values becomes one array)."""
    forms: list[tuple[str, str]] = []
    seen: set[str] = set()
    for delim in toon.DELIMITERS:   # the cheapest delimiter depends on the cells: measure each
        try:
            encoded = toon.encode(value, delim)
        except (ValueError, TypeError, RecursionError):
            break
        if encoded in seen:
            continue   # no table in the value: every delimiter gives the same text
        seen.add(encoded)
        if toon.round_trips(value, encoded):
            forms.append((encoded, f"TOON, {_DELIM_NAMES[delim]} (decoded: every value and number text equal)"))
    want = _expected_tokens(original, stream)
    mini = minify(value)
    if _proven(mini, value, want):
        forms.append((mini, "minified JSON (token stream equal to the original's)"))
    if original is not None and not stream:
        dedented = "\n".join(ln.strip() for ln in original.split("\n") if ln.strip())
        if dedented != original and _proven(dedented, value, want):
            forms.append((dedented, "JSON with indentation removed (token stream equal to the original's)"))
    forms.sort(key=lambda f: _size(f[0]))
    return forms


def _expected_tokens(original: str | None, stream: bool) -> list | None:
    """The token stream a JSON form of original must have (a stream as one array)."""
    if original is None:
        return None
    try:
        toks = json_text.tokens(original)
    except (ValueError, RecursionError):
        return None
    if not stream:
        return toks
    values, depth, cur = [], 0, []
    for t in toks:
        cur.append(t)
        if t in ("{", "["):
            depth += 1
        elif t in ("}", "]"):
            depth -= 1
        if depth == 0:
            values.append(cur)
            cur = []
    return json_text.stream_tokens(values)


def _proven(text: str, value, want: list | None) -> bool:
    """Lossless by the text: equal token streams; without the original, equal parsed values
    whose numbers carry the same text."""
    try:
        if want is not None:
            return json_text.tokens(text) == want
        return toon.strict_equal(json_text.loads(text), value)
    except (ValueError, RecursionError):
        return False


@lru_cache(maxsize=16)
def _size(text: str) -> int:
    """Tokens when the counter is there (the unit the guard judges by), else characters/4."""
    try:
        from capsule.ground.tokens import count
        return count(text)
    except ImportError:
        return len(text) // 4


def lossless_form(value) -> tuple[str, str] | None:
    """(text, note) of the shortest proven lossless form."""
    forms = lossless_forms(value)
    return forms[0] if forms else None
