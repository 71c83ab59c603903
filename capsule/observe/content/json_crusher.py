"""JSON crusher: a lossless tier (minify or TOON, round trip proven at run time) and a lossy
tier for large arrays of objects (schema, sampled rows, every anomalous row kept, counts said).

Not responsible for deciding whether the result is worth emitting (the guard measures tokens)
nor for archiving the original (the pipeline does).
Invariant: a result marked lossless decodes back to exactly the parsed input; the lossy tier
never drops a row with an error field, an unexpected null, a numeric outlier or an intent hit.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from capsule.observe.content import toon
from capsule.observe.types import Context, Removal, TransformResult

TRANSFORM_ID = "json"
LOSSY_MIN_ROWS = 30          # arrays shorter than this are never sampled
AGGRESSIVE_MIN_ROWS = 12
HEAD_ROWS = 3
TAIL_ROWS = 1
NULL_ANOMALY_SHARE = 0.8     # a null is anomalous where >= 80% of rows have a value
OUTLIER_Z = 3.5              # robust z-score (median / MAD) beyond which a number is an outlier
LINE_KEEPING_SLACK = 1.25   # prefer the line-keeping lossless form within this factor of the best
RARE_SHARE = 0.02            # a categorical value this rare is anomalous (rows >= 50)
VERBATIM_LINE_MAX = 1000     # longer lines are documents, not error reports
LONG_STRING = 400            # seed 003: a string over this many characters is cut...
LONG_STRING_KEEP = 160       # ...to its first characters, the rest recoverable from the archive

_ERROR_KEY = re.compile(r"(?i)(?:^|_|-)(?:err|error|errors|exception|fail|failed|failure|fault|"
                        r"fatal|traceback|stderr|warning|warnings)(?:$|_|-)")
_ERROR_VALUE = re.compile(r"(?i)\b(?:error|errors|exception|fail(?:ed|ure)?|fatal|panic|"
                          r"denied|refused|timed? ?out|traceback|invalid|crash(?:ed)?|abort(?:ed)?)\b")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*[A-Za-z0-9_]|[A-Za-z0-9]")
_STOP = frozenset(
    "the a an and or of to in on for with from by is are was be it this that what which why how "
    "find show list get check see look does do did not no all any each into out at as find "
    "json output result results value values field fields row rows item items data".split())


_dec = json.JSONDecoder()
_DELIM_NAMES = {",": "comma-separated rows", "\t": "tab-separated rows", " ": "space-separated rows"}


def parse(text: str):
    """The parsed JSON value, or raise ValueError. A stream of several top-level values
    (NDJSON, `go list -json`) parses as a _Stream list of them."""
    try:
        return json.loads(text)
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
    return json.dumps(value, ensure_ascii=False, separators=(",", ": "))


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
    """Transform entry point: lossless first, the lossy tier for large arrays of objects."""
    try:
        value = parse(text)
    except (ValueError, RecursionError):
        return TransformResult(text, TRANSFORM_ID, notes=["not JSON; left as is"])
    stream = isinstance(value, _Stream)
    value = list(value) if stream else value
    lost = _lost_verbatim()
    forms = [f for f in lossless_forms(value, None if stream else text) if not lost(text, f[0])]
    chosen = forms[0] if forms else None
    # A form that keeps every original line (indentation aside) is preferred unless the best
    # re-serialisation saves much more: agents and the must-keep corpus quote JSON lines.
    keeping = [f for f in forms if f[1].startswith("JSON with indentation removed")]
    if chosen is not None and keeping and ctx.mode != "aggressive" and \
            _size(keeping[0][0]) <= _size(chosen[0]) * LINE_KEEPING_SLACK:
        chosen = keeping[0]
    if chosen is None:
        return TransformResult(text, TRANSFORM_ID, notes=["no lossless form kept every error line"])
    min_rows = AGGRESSIVE_MIN_ROWS if ctx.mode == "aggressive" else LOSSY_MIN_ROWS
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
    for sampled in lossy_forms(value, ctx.intent, min_rows):
        if _size(sampled.text) < best_size and not lost(text, sampled.text):
            return sampled
    if trimmed is not None:
        return trimmed
    body, how = chosen
    if stream:
        how = f"stream of {len(value)} JSON values as one array; " + how
    return TransformResult(body, TRANSFORM_ID, lossless=True, notes=[how])


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
    if not m or (m.group(2) and _ERROR_KEY.search(m.group(2))):
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


def lossless_forms(value, original: str | None = None) -> list[tuple[str, str]]:
    """Every proven lossless form, shortest first: TOON with each cell delimiter
    (decode(encode(x)) == x checked),
    minified JSON, and the original's lines with indentation stripped (which keeps every
    original line as a substring)."""
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
            forms.append((encoded, f"TOON, {_DELIM_NAMES[delim]} (decode(encode(x)) == x checked)"))
    mini = minify(value)
    if _same(mini, value):
        forms.append((mini, "minified JSON (round trip checked)"))
    if original is not None:
        dedented = "\n".join(ln.strip() for ln in original.split("\n") if ln.strip())
        if dedented != original and _same(dedented, value):
            forms.append((dedented, "JSON with indentation removed (round trip checked)"))
    forms.sort(key=lambda f: _size(f[0]))
    return forms


def _size(text: str) -> int:
    """Tokens when the counter is there (the unit the guard judges by), else characters/4."""
    try:
        from capsule.measure.tokens import count
        return count(text)
    except ImportError:
        return len(text) // 4


def lossless_form(value) -> tuple[str, str] | None:
    """(text, note) of the shortest proven lossless form."""
    forms = lossless_forms(value)
    return forms[0] if forms else None


def _same(text: str, value) -> bool:
    try:
        return toon.strict_equal(json.loads(text), value)
    except (ValueError, RecursionError):
        return False


# ---------------------------------------------------------------- lossy tier


@dataclass
class Sampled:
    """A large array reduced to the rows worth reading, with the why of each kept row."""

    total: int
    kept: list[int]                                  # original indices, ascending
    why: dict[int, list[str]] = field(default_factory=dict)
    schema: str = ""


def _intent_terms(intent: str | None) -> list[str]:
    if not intent:
        return []
    terms = []
    for w in _WORD.findall(intent):
        lw = w.lower()
        if lw not in _STOP and (len(lw) >= 3 or any(c.isdigit() for c in lw)):
            terms.append(lw)
    return sorted(set(terms))


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _flat(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False, sort_keys=True).lower()


def anomalies(rows: list[dict], intent: str | None = None) -> dict[int, list[str]]:
    """Index -> reasons for every row that must survive sampling."""
    n = len(rows)
    why: dict[int, list[str]] = {}

    def mark(i: int, reason: str) -> None:
        why.setdefault(i, [])
        if reason not in why[i]:
            why[i].append(reason)

    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    for k in keys:
        col = [r.get(k) for r in rows]
        present = [v for v in col if v is not None and v != "" and v != [] and v != {}]
        if _ERROR_KEY.search(k):
            for i, v in enumerate(col):
                if v not in (None, False, "", 0, [], {}) and str(v).lower() not in ("ok", "none", "null"):
                    mark(i, f"error field {k}")
        if n and len(present) / n >= NULL_ANOMALY_SHARE and len(present) < n:
            for i, v in enumerate(col):
                if v is None or v == "" or k not in rows[i]:
                    mark(i, f"null {k}")
        nums = [(i, x) for i, v in enumerate(col) if (x := _number(v)) is not None]
        if len(nums) >= 8:
            vals = sorted(x for _, x in nums)
            med = vals[len(vals) // 2]
            mad = sorted(abs(x - med) for x in vals)[len(vals) // 2]
            if mad > 0:
                for i, x in nums:
                    if abs(x - med) / (1.4826 * mad) > OUTLIER_Z:
                        mark(i, f"outlier {k}")
            else:
                off = [(i, x) for i, x in nums if x != med]
                if 0 < len(off) <= max(1, int(len(nums) * 0.05)):
                    for i, _ in off:
                        mark(i, f"outlier {k}")
        strs = [(i, v) for i, v in enumerate(col) if isinstance(v, (str, bool))]
        if len(strs) >= 50:
            counts = Counter(v for _, v in strs)
            if len(counts) <= 12:
                limit = max(1, int(len(strs) * RARE_SHARE))
                for i, v in strs:
                    if counts[v] <= limit:
                        mark(i, f"rare {k}")
    for i, r in enumerate(rows):
        for v in r.values():
            if isinstance(v, str) and _ERROR_VALUE.search(v):
                mark(i, "error text")
                break
    terms = _intent_terms(intent)
    if terms:
        flats = [_flat(r) for r in rows]
        for t in terms:
            pat = re.compile(r"(?<![a-z0-9_])" + re.escape(t) + r"(?![a-z0-9_])")
            hits = [i for i, f in enumerate(flats) if pat.search(f)]
            if hits and len(hits) <= max(3, n // 10):
                for i in hits:
                    mark(i, f"intent '{t}'")
    return why


def _schema(rows: list[dict]) -> str:
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    parts = []
    for k in keys:
        col = [r.get(k) for r in rows]
        nulls = sum(1 for v in col if v is None)
        kinds = Counter(type(v).__name__ for v in col if v is not None)
        kind = "|".join(t for t, _ in kinds.most_common()) or "null"
        nums = [x for v in col if (x := _number(v)) is not None]
        desc = f"{k}:{kind}"
        if nums and len(nums) == len(col) - nulls:
            desc += f" {_fmt(min(nums))}..{_fmt(max(nums))}"
        else:
            distinct = Counter(v for v in col if isinstance(v, (str, bool)))
            if 0 < len(distinct) <= 4 and sum(distinct.values()) >= 4:
                desc += " {" + ",".join(f"{v}×{c}" for v, c in distinct.most_common()) + "}"
        if nulls:
            desc += f" null×{nulls}"
        parts.append(desc)
    return "; ".join(parts)


def _fmt(x: float) -> str:
    return str(int(x)) if x == int(x) and math.isfinite(x) and abs(x) < 1e15 else f"{x:g}"


def sample(rows: list[dict], intent: str | None) -> Sampled:
    n = len(rows)
    why = anomalies(rows, intent)
    keep = set(range(min(HEAD_ROWS, n))) | set(range(max(0, n - TAIL_ROWS), n)) | set(why)
    return Sampled(n, sorted(keep), why, _schema(rows))


def _is_object_array(v) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(isinstance(x, dict) for x in v)


def lossy_forms(value, intent: str | None, min_rows: int = LOSSY_MIN_ROWS) -> list[TransformResult]:
    """The sampled result as TOON, then as indented JSON (whose kept rows keep their original
    `"key": value` lines, so error lines survive the verbatim check)."""
    first = lossy(value, intent, min_rows)
    if first is None:
        return []
    second = lossy(value, intent, min_rows, as_json=True)
    return [r for r in (first, second) if r is not None]


def lossy(value, intent: str | None, min_rows: int = LOSSY_MIN_ROWS,
          as_json: bool = False) -> TransformResult | None:
    """Sample every array of >= min_rows objects; None when there is none."""
    removals: list[Removal] = []
    summaries: list[str] = []

    def walk(v, path: str):
        if _is_object_array(v) and len(v) >= min_rows:
            s = sample(v, intent)
            kept_set = set(s.kept)
            run: list[int] = []
            for i in list(range(len(v))) + [len(v)]:
                if i < len(v) and i not in kept_set:
                    run.append(i)
                    continue
                if run:
                    removals.append(Removal(
                        reason=f"{path or '(root)'}: rows {run[0]}-{run[-1]} sampled out (no anomaly)",
                        count=len(run), preview=minify(v[run[0]])[:120]))
                    run = []
            counts = Counter(r.split(" ")[0] for i in s.kept for r in s.why.get(i, []))
            detail = ", ".join(f"{k} {c}" for k, c in sorted(counts.items()))
            summaries.append(
                f"{path or '(root)'}: {len(s.kept)} of {s.total} rows shown (first {min(HEAD_ROWS, s.total)}, "
                f"last {TAIL_ROWS}, anomalous {len(s.why)}" + (f": {detail}" if detail else "") + ")")
            shown = [{"_row": i, **{k: walk(x, f"{path}[{i}].{k}") for k, x in v[i].items()}}
                     for i in s.kept]
            return _Note(shown, f"{len(s.kept)} of {s.total} rows; schema {s.schema}")
        if isinstance(v, dict):
            return {k: walk(x, f"{path}.{k}" if path else k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return v

    reduced = walk(value, "")
    if not removals:
        return None
    if as_json:
        body = json.dumps(reduced, indent=1, ensure_ascii=False)
    else:
        body = _encode_with_notes(reduced)
    head = "# sampled: " + "; ".join(summaries)
    return TransformResult(head + "\n" + body, TRANSFORM_ID, removals=removals, lossless=False,
                           notes=summaries)


class _Note(list):
    """A sampled array: renders as TOON preceded by a '# ...' line naming what was cut."""

    def __init__(self, rows: list, note: str):
        super().__init__(rows)
        self.note = note


def _encode_with_notes(value) -> str:
    lines = toon.encode(value).split("\n")
    notes = _collect_notes(value, [])
    if not notes:
        return "\n".join(lines)
    out = []
    for line in lines:
        stripped = line.lstrip(" ")
        for note in notes:
            if note[0] is not None and _header_matches(stripped, note):
                out.append(line[: len(line) - len(stripped)] + "# " + note[2])
                note[0] = None
                break
        out.append(line)
    return "\n".join(out)


def _collect_notes(value, acc: list, key: str = "") -> list:
    if isinstance(value, _Note):
        acc.append([True, key, value.note, len(value)])
    if isinstance(value, dict):
        for k, v in value.items():
            _collect_notes(v, acc, k)
    elif isinstance(value, list):
        for v in value:
            _collect_notes(v, acc, "")
    return acc


def _header_matches(stripped: str, note: list) -> bool:
    key = note[1]
    prefix = (toon._key(key) if key else "")
    body = stripped[2:] if stripped.startswith("- ") else stripped
    return body.startswith(f"{prefix}[{note[3]}]")
