"""The lossy JSON tier: structural reduction of any large collection — arrays of records
(schema + sampled rows), long arrays of scalars or mixed items, wide maps — each keeping its
head, its tail and every anomaly (json_anomaly), with the path of each kept part and an
in-place elision saying what went and why; long strings are cut to their head.

Not responsible for the lossless tier or for choosing between tiers (json_crusher).
Invariant: the body (the text after the '# ' lines) is valid JSON or TOON; every removed
part is a Removal with its path and reason; an error-class item or row is never removed.
"""

from __future__ import annotations

from collections import Counter

from capsule.observe.content import json_text, toon
from capsule.observe.content.json_anomaly import (HEAD_ROWS, TAIL_ROWS, ERROR_KEY, holds_error,
                                                  intent_terms, is_error_value, value_shape, sample,
                                                  value_anomalies)
from capsule.observe.transform_types import Removal, TransformResult
from capsule.observe.verbatim import is_verbatim
from capsule.observe.content.json_records import identity_line

TRANSFORM_ID = "json"
LOSSY_MIN_ROWS = 30          # arrays of records shorter than this are never sampled
AGGRESSIVE_MIN_ROWS = 12
MIN_ITEMS = 30               # arrays of other items / maps with fewer entries are never sampled
HEAD_ITEMS = 5
TAIL_ITEMS = 3
LONG_STRING = 400            # seed 003: a string over this many characters is cut...
LONG_STRING_KEEP = 160       # ...to its first characters, the rest recoverable from the archive
DEEP_LEVEL = 6               # in a large document, containers this deep are summarised...
DEEP_MIN_CHARS = 20000       # ...when the document has at least this many characters
SAMPLE_MIN_CHARS = 6000      # long arrays / wide maps are sampled in documents this big (minified):
                             # a config file an agent reads to edit (package.json) stays whole
RECORDS_MIN = 3              # an array of this many objects is a set of records (pip inspect's
                             # `installed`): in a DEEP_MIN_CHARS document their bulky members shrink:
RECORD_TEXT = 120            # a text body (a string with a line break) over this many characters...
RECORD_TEXT_KEEP = 80        # ...keeps its head; a description or README is not what a listing is read for
RECORD_ITEMS = 6             # a list of scalars with more items keeps its first RECORD_HEAD and last
RECORD_HEAD = 3              # item (plus any item holding error text or an intent term)
VERBATIM_LINE_MAX = 1000     # a longer line is a document, not an error report (shorter ones with an
                             # error word the pipeline's verbatim check wants kept: never cut)
MIN_GAP = 3                  # fewer consecutive items than this are kept rather than elided
SUMMARY_MAX = 8              # collections named on the '# sampled:' line (the rest counted)
ELIDED = "…"                 # starts every elision written in place of what went
JSON_LINES = "rendered as JSON, one value per line"


def _is_object_array(v) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(isinstance(x, dict) for x in v)


def lossy_forms(value, intent: str | None, min_rows: int = LOSSY_MIN_ROWS) -> list[TransformResult]:
    """The reduced value as TOON, then as JSON lines (whose kept parts keep their original
    `"key": value` lines, so error lines survive the verbatim check); one reduction, two renderings."""
    done = reduce(value, intent, min_rows)
    if done is None:
        return []
    return [r for r in (render(done, False), render(done, True)) if r is not None]


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted indices as (first, last)."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _rule(reason: str) -> str:
    """The rule of a keep reason, without its detail (`rare form 0.0.0-a` -> `rare form`)."""
    words = reason.split(" '")[0].split(" ")
    return " ".join(words[:2]) if words[0] == "rare" else " ".join(words)


def _kinds(values: list) -> str:
    return ", ".join(f"{k}×{c}" for k, c in Counter(value_shape(v).split("{")[0] for v in values).most_common(3))


def _leaf_count(v, budget: int = 100000) -> int:
    n, stack = 0, [v]
    while stack and n < budget:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        else:
            n += 1
    return n


class _Reducer:
    def __init__(self, intent: str | None, min_rows: int, size: int = 0):
        # record arrays are sampled at any size; other collections, depth summaries and string
        # cuts only in documents of SAMPLE_MIN_CHARS / DEEP_MIN_CHARS (aggressive mode: always)
        self.intent, self.min_rows, self.deep = intent, min_rows, size >= DEEP_MIN_CHARS
        self.terms = intent_terms(intent)
        self.min_items = max(min_rows, 12) if min_rows < LOSSY_MIN_ROWS else MIN_ITEMS
        self.collections = size >= SAMPLE_MIN_CHARS or min_rows < LOSSY_MIN_ROWS
        self.removals: list[Removal] = []
        self.summaries: list[str] = []
        self.records = 0                       # > 0 while inside the records of a record array
        self.texts_cut = self.lists_cut = 0

    def walk(self, v, path: str, key: str = "", depth: int = 0):
        if self.deep and depth >= DEEP_LEVEL and isinstance(v, (dict, list)) and v and self._plain(v):
            return self.summarise(v, path)
        if self.deep and _is_object_array(v) and len(v) >= RECORDS_MIN:
            self.records += 1
            try:
                if len(v) >= self.min_rows:
                    return self.rows(v, path, depth)
                return [self.walk(x, f"{path}[{i}]", "", depth + 1) for i, x in enumerate(v)]
            finally:
                self.records -= 1
        if self.records and not ERROR_KEY.search(key):
            if isinstance(v, list) and len(v) > RECORD_ITEMS and not any(isinstance(x, (dict, list)) for x in v):
                return self.clip(v, path)
            if isinstance(v, str) and "\n" in v.strip() and len(v) > RECORD_TEXT and not _reports(v) \
                    and not self._named(v):
                self.texts_cut += 1
                return self.cut(v, path, RECORD_TEXT, RECORD_TEXT_KEEP)
        if _is_object_array(v) and len(v) >= self.min_rows:
            return self.rows(v, path, depth)
        if self.collections and isinstance(v, list) and len(v) >= self.min_items:
            return self.items(v, path, depth)
        if self.collections and isinstance(v, dict) and len(v) >= self.min_items and \
                not isinstance(v, json_text.Pairs):
            return self.map(v, path, depth)
        if isinstance(v, dict):
            return self.obj(v, path, depth)
        if isinstance(v, list):
            return [self.walk(x, f"{path}[{i}]", "", depth + 1) for i, x in enumerate(v)]
        if self.deep and isinstance(v, str) and len(v) > LONG_STRING and not ERROR_KEY.search(key) \
                and not _reports(v):
            return self.cut(v, path)
        return v

    def _plain(self, v) -> bool:
        """No error-class value and no intent term inside: safe to summarise."""
        if holds_error(v, budget=20000):
            return False
        flat = json_text.dumps(v).lower()
        return not any(t in flat for t in self.terms)

    def summarise(self, v, path: str) -> str:
        what = f"object of {len(v)} keys ({', '.join(list(v)[:4])}{', …' if len(v) > 4 else ''})" \
            if isinstance(v, dict) else f"array of {len(v)} items"
        leaves = _leaf_count(v)
        self.removals.append(Removal(f"{path}: {what} at depth {DEEP_LEVEL}+ summarised ({leaves} values, "
                                     "no error text)", count=leaves, preview=json_text.dumps(v)[:120]))
        return f"{ELIDED}{what}, {leaves} values elided"

    def obj(self, v: dict, path: str, depth: int = 0):
        pairs = [(k, self.walk(x, f"{path}.{k}" if path else k, k, depth + 1)) for k, x in json_text.items(v)]
        return json_text.Pairs(pairs) if isinstance(v, json_text.Pairs) else dict(pairs)

    def cut(self, s: str, path: str, over: int = LONG_STRING, head: int = LONG_STRING_KEEP) -> str:
        keep = s[:head]
        self.removals.append(Removal(f"{path or '(root)'}: string over {over} chars cut to "
                                     f"{head}", 0, preview=s[:120]))
        return f"{keep}{ELIDED}[+{len(s) - len(keep)} chars]"

    def _named(self, v) -> bool:
        return isinstance(v, str) and any(t in v.lower() for t in self.terms)

    def clip(self, v: list, path: str) -> list:
        """A long list of scalars inside a record: its head, its last item and every item that
        holds error text or an intent term; each gap one string naming the indices that went."""
        keep = set(range(RECORD_HEAD)) | {len(v) - 1} | \
            {i for i, x in enumerate(v) if is_error_value(x) or self._named(x)}
        keep |= {i + 1 for i in keep if i + 2 in keep}      # a one-item gap costs more than the item
        out: list = []
        prev = -1
        for i in sorted(keep) + [len(v)]:
            if i - prev > 1:
                a, b = prev + 1, i - 1
                self.removals.append(Removal(f"{path}[{a}..{b}]: {b - a + 1} items of a record's list elided "
                                             f"(no error text; {_kinds(v[a:b + 1])})", count=b - a + 1,
                                             preview=json_text.dumps(v[a])[:120]))
                out.append(f"{ELIDED}{b - a + 1} items [{a}..{b}] elided")
            if i < len(v):
                out.append(v[i])
            prev = i
        if len(out) < len(v):
            self.lists_cut += 1
            return out
        return v

    def rows(self, v: list, path: str, depth: int = 0):
        s = sample(v, self.intent)
        kept = set(s.kept)
        for a, b in _runs([i for i in range(len(v)) if i not in kept]):
            self.removals.append(Removal(f"{path or '(root)'}: rows {a}-{b} sampled out (no anomaly)",
                                         count=b - a + 1, preview=json_text.dumps(v[a])[:120]))
        counts = Counter(r.split(" ")[0] for i in s.kept for r in s.why.get(i, []))
        detail = ", ".join(f"{k} {c}" for k, c in sorted(counts.items()))
        self.summaries.append(
            f"{path or '(root)'}: {len(s.kept)} of {s.total} rows shown (first {min(HEAD_ROWS, s.total)}, "
            f"last {TAIL_ROWS}, anomalous {len(s.why)}" + (f": {detail}" if detail else "") + ")")
        ident = identity_line(v, kept, path or "(root)")       # what names each record is never sampled away
        if ident:
            self.summaries.append(ident)
        shown = [{"_row": i, **{k: self.walk(x, f"{path}[{i}].{k}", k, depth + 2) for k, x in json_text.items(v[i])}}
                 for i in s.kept]
        return SampledArray(shown, f"{len(s.kept)} of {s.total} rows; schema {s.schema}")

    def _keep(self, n: int, why: dict[int, list[str]]) -> list[int]:
        keep = sorted(set(range(min(HEAD_ITEMS, n))) | set(range(max(0, n - TAIL_ITEMS), n)) | set(why))
        filled: list[int] = []
        for i in keep:   # a gap shorter than MIN_GAP costs more to describe than to show
            if filled and 1 < i - filled[-1] <= MIN_GAP:
                filled.extend(range(filled[-1] + 1, i))
            filled.append(i)
        return filled

    def _summary(self, path: str, what: str, kept: list[int], n: int, why: dict, values: list) -> None:
        counts = Counter(_rule(r) for i in kept for r in why.get(i, []))
        detail = ", ".join(f"{k} {c}" for k, c in sorted(counts.items()))
        self.summaries.append(f"{path or '(root)'}: {len(kept)} of {n} {what} shown ({_kinds(values)}; first "
                              f"{min(HEAD_ITEMS, n)}, last {min(TAIL_ITEMS, n)}, anomalous {len(why)}"
                              + (f": {detail}" if detail else "") + ")")

    def items(self, v: list, path: str, depth: int = 0):
        """A long array of scalars or mixed items: head, tail, anomalies; each gap becomes one
        string naming the indices that went."""
        why = value_anomalies(v, None, self.intent)
        kept = self._keep(len(v), why)
        self._summary(path, "items", kept, len(v), why, v)
        out: list = []
        prev = -1
        for i in kept + [len(v)]:
            if i - prev > 1:
                a, b = prev + 1, i - 1
                reason = f"{path or '(root)'}[{a}..{b}]: {b - a + 1} items sampled out (no anomaly; {_kinds(v[a:b + 1])})"
                self.removals.append(Removal(reason, count=b - a + 1, preview=json_text.dumps(v[a])[:120]))
                out.append(f"{ELIDED}{b - a + 1} items [{a}..{b}] elided")
            if i < len(v):
                out.append(self.walk(v[i], f"{path}[{i}]", "", depth + 1))
            prev = i
        return out

    def map(self, v: dict, path: str, depth: int = 0):
        """A wide map: head, tail and anomalous keys; each gap becomes one entry whose key
        names the first and last key that went."""
        keys = list(v)
        values = [v[k] for k in keys]
        why = value_anomalies(values, keys, self.intent)
        kept = self._keep(len(keys), why)
        self._summary(path, "keys", kept, len(keys), why, values)
        out: dict = {}
        prev = -1
        for i in kept + [len(keys)]:
            if i - prev > 1:
                a, b = prev + 1, i - 1
                where = f"{path}.{{{keys[a]} .. {keys[b]}}}" if path else f"{{{keys[a]} .. {keys[b]}}}"
                self.removals.append(Removal(f"{where}: {b - a + 1} keys sampled out (no anomaly; "
                                             f"{_kinds(values[a:b + 1])})", count=b - a + 1,
                                             preview=f"{keys[a]}: {json_text.dumps(values[a])}"[:120]))
                out[f"{ELIDED}{b - a + 1} keys ({keys[a]} .. {keys[b]})"] = "elided"
            if i < len(keys):
                k = keys[i]
                out[k] = self.walk(v[k], f"{path}.{k}" if path else k, k, depth + 1)
            prev = i
        return out


def _reports(s: str) -> bool:
    """A string whose JSON line the verbatim check holds to (short enough to be a report and
    with an error word): cutting it would lose an error line."""
    line = json_text.dumps(s)
    return len(line) <= VERBATIM_LINE_MAX and is_verbatim(line)


def reduce(value, intent: str | None, min_rows: int = LOSSY_MIN_ROWS):
    """(reduced value, removals, summaries) with every large collection sampled; None when
    nothing was removed. The reduced value holds the same kinds of values as the input."""
    r = _Reducer(intent, min_rows, _chars(value))
    reduced = r.walk(value, "")
    if not r.removals:
        return None
    summaries = r.summaries[:SUMMARY_MAX]
    if len(r.summaries) > SUMMARY_MAX:
        summaries.append(f"{len(r.summaries) - SUMMARY_MAX} more collections sampled")
    cut = sum(1 for x in r.removals if x.count == 0) - r.texts_cut
    if cut:
        summaries.append(f"{cut} long strings cut to {LONG_STRING_KEEP} characters")
    if r.texts_cut or r.lists_cut:
        summaries.append(f"in records: {r.texts_cut} text values cut to {RECORD_TEXT_KEEP} characters, "
                         f"{r.lists_cut} lists cut to their first {RECORD_HEAD} and last item")
    return reduced, r.removals, summaries


def lossy(value, intent: str | None, min_rows: int = LOSSY_MIN_ROWS,
          as_json: bool = False) -> TransformResult | None:
    """The reduced value as TOON (or JSON lines) under one '# sampled:' line; None when
    nothing was removed."""
    done = reduce(value, intent, min_rows)
    return None if done is None else render(done, as_json)


def render(done: tuple, as_json: bool) -> TransformResult | None:
    reduced, removals, summaries = done
    try:
        body = json_text.dumps(reduced, indent=0) if as_json else _encode_with_notes(reduced)
    except (ValueError, TypeError, RecursionError):   # e.g. a repeated key: no TOON form
        return None
    head = "# sampled: " + "; ".join(summaries)
    return TransformResult(head + "\n" + body, TRANSFORM_ID, removals=removals, lossless=False,
                           notes=summaries + ([JSON_LINES] if as_json else []))


def _chars(value) -> int:
    try:
        return len(json_text.dumps(value))
    except (RecursionError, TypeError):
        return DEEP_MIN_CHARS


class SampledArray(list):
    """A sampled array of records: renders as TOON preceded by a '# ...' line naming what was cut."""

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
    if isinstance(value, SampledArray):
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
    prefix = (toon.toon_key(key) if key else "")
    body = stripped[2:] if stripped.startswith("- ") else stripped
    return body.startswith(f"{prefix}[{note[3]}]")
