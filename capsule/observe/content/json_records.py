"""Records in every layout: a JSON array written one record a line, JSON Lines / NDJSON and JSON log
streams get the record sampling of pretty JSON (json_anomaly.sample: head, tail, every anomaly),
shown as the input's own lines; and the keys that identify a record are never sampled away.

Not responsible for pretty or nested JSON (json_reduce) nor for choosing between forms (json_crusher).
Invariant: every shown record line is byte-exact, in order; every record that reports an error (by
its non-empty values) is shown; a record not shown still has its identifying value (id, _id, name,
version, key, uuid, or a key unique across the records) named on the header line; deterministic.
"""

from __future__ import annotations

import re

from capsule.observe.content import json_text
from capsule.observe.transform_types import Removal, TransformResult
from capsule.observe.content import toon  # noqa: F401 - loaded before json_anomaly (their import order)
from capsule.observe.content.json_anomaly import sample
from capsule.observe.verbatim import is_verbatim, verbatim_flags

TRANSFORM_ID = "json"
ID_KEYS = ("id", "name", "version", "_id", "uuid", "key", "sha", "digest")   # by preference, when unique
ID_MAX_CHARS = 80          # a longer value does not identify a record, it is content
_NUMBERED = re.compile(r"^(.*?)(\d+)$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d|^\d{1,2}:\d{2}")


def record_lines(text: str) -> tuple[list[int], list[dict]] | None:
    """(line index of each record, the records) when every non-blank line is one JSON object
    (a trailing comma allowed), optionally between a `[` and a `]` line; else None."""
    lines = text.split("\n")
    idx = [i for i, ln in enumerate(lines) if ln.strip()]
    if len(idx) < 3:
        return None
    first, last = lines[idx[0]].strip(), lines[idx[-1]].strip()
    bracketed = first == "[" and last in ("]", "];")
    if bracketed:
        idx = idx[1:-1]
    records, where = [], []
    for i in idx:
        ln = lines[i].strip()
        if bracketed and ln.endswith(","):
            ln = ln[:-1]
        if not (ln.startswith("{") and ln.endswith("}")):
            return None
        try:
            value = json_text.loads(ln)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        records.append(value)
        where.append(i)
    return where, records


def identifying_key(records: list[dict]) -> str | None:
    """The key that names each record: every record has it as a short scalar and no two share a
    value; one of ID_KEYS first (in that order), else the one with the shortest values."""
    if not records:
        return None

    def usable(k: str) -> bool:
        vals = []
        for r in records:
            v = r.get(k) if isinstance(r, dict) else None
            if isinstance(v, (dict, list, float, bool)) or v is None or len(str(v)) > ID_MAX_CHARS:
                return False
            if k not in ID_KEYS and (isinstance(v, int) or " " in v or _TIME.match(v)):
                return False          # a count, a sentence or a timestamp differs by chance, it names nothing
            vals.append(str(v))
        return len(set(vals)) == len(vals)

    keys = list(dict.fromkeys(k for r in records[:50] if isinstance(r, dict) for k in r))
    for k in ID_KEYS:
        if k in keys and usable(k):
            return k
    unique = [k for k in keys if usable(k)]
    return min(unique, key=lambda k: (sum(len(str(r[k])) for r in records), keys.index(k))) if unique else None


def compact(values: list[str]) -> str:
    """Values in order, a run of `prefix<N>` with consecutive N written `first…last`."""
    out: list[str] = []
    run: list[tuple[str, int, str]] = []

    def close() -> None:
        if len(run) >= 3:
            out.append(f"{run[0][2]}…{run[-1][2]}")
        else:
            out.extend(v for _, _, v in run)
        run.clear()

    for v in values:
        m = _NUMBERED.match(v)
        # the next number written as its predecessor was: same zero padding (ord-00009, ord-00010)
        if m and run and m.group(1) == run[-1][0] and int(m.group(2)) == run[-1][1] + 1 \
                and m.group(2) == str(run[-1][1] + 1).zfill(len(run[-1][2]) - len(run[-1][0])):
            run.append((m.group(1), int(m.group(2)), v))
            continue
        close()
        if m:
            run.append((m.group(1), int(m.group(2)), v))
        else:
            out.append(v)
    close()
    return ", ".join(out)


def identity_line(records: list, kept: set[int], path: str = "(root)") -> str | None:
    """`(root): id of the 395 records not shown: ord-1003…ord-1232, …`, or None."""
    key = identifying_key(records)
    hidden = [i for i in range(len(records)) if i not in kept]
    if key is None or not hidden:
        return None
    return f"{path}: {key} of the {len(hidden)} records not shown: " + compact([str(records[i][key]) for i in hidden])


def _empty(v) -> bool:
    return v is None or v is False or v == 0 or v == "" or v == [] or v == {}


def error_records(records: list[dict], lines: list[str]) -> set[int]:
    """Records whose line is verbatim-class (an error, failure, warning…) once its empty fields are
    left out: `"error": null`, `"errors": 0`, `"failed": false` name an error that did not happen,
    and on every record of an export they would make every line an error line."""
    out = set()
    for k, flagged in enumerate(verbatim_flags(lines)):
        if flagged and is_verbatim(json_text.dumps({key: v for key, v in records[k].items() if not _empty(v)})):
            out.add(k)
    return out


def sampled_lines(text: str, intent: str | None, min_rows: int) -> TransformResult | None:
    """The record-lines layout sampled like pretty JSON, each shown record its own original line."""
    found = record_lines(text)
    if found is None or len(found[1]) < min_rows:
        return None
    where, records = found
    s = sample(records, intent)
    lines = text.split("\n")
    errors = error_records(records, [lines[i].strip() for i in where]) - set(s.kept)
    kept = set(s.kept) | errors
    if len(kept) == len(records):
        return None
    record_at = {line: k for k, line in enumerate(where)}
    out, removals = [], []
    for i, ln in enumerate(lines):
        k = record_at.get(i)
        if k is None or k in kept:
            out.append(ln)
        elif removals and removals[-1].end == i:          # 1-based end of the previous run: contiguous
            r = removals[-1]
            removals[-1] = Removal(r.reason, r.count + 1, r.start, i + 1, r.preview)
        else:
            removals.append(Removal("record sampled out (no anomaly)", 1, i + 1, i + 1, ln.strip()[:120]))
    anomalous = len(s.why)
    reporting = f", reporting an error {len(errors)}" if errors else ""
    head = (f"# sampled: {len(kept)} of {len(records)} records shown, one a line as written (first "
            f"{min(3, len(records))}, last 1, anomalous {anomalous}{reporting}); schema {s.schema}")
    ident = identity_line(records, kept)
    if ident:
        head += "\n# " + ident
    return TransformResult(head + "\n" + "\n".join(out), TRANSFORM_ID, removals=removals,
                           notes=[f"{len(kept)} of {len(records)} records, line layout kept"])
