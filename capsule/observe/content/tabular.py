"""CSV/TSV sampling: the header, the first and last rows and every anomalous row, kept as
their original lines, with a one-line summary of counts and column ranges.

Not responsible for JSON arrays (json_crusher) — it reuses that module's anomaly rules so
both doors keep the same rows. Tables shorter than MIN_ROWS are left alone.
Invariant: the header line and every kept row are byte-exact original lines, in order; the
summary says how many rows there were and how many are shown.
"""

from __future__ import annotations

import csv
import io
import itertools
import re

from capsule.observe.content import json_crusher
from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "tabular"
MIN_ROWS = 30
HEAD_ROWS = 5
TAIL_ROWS = 1
_NUM = re.compile(r"-?\d+(?:\.\d+)?\Z")


def delimiter_of(head: str) -> str | None:
    """The delimiter of a delimited-text head, or None when it does not look tabular.

    Records, not lines, are compared: a quoted field may hold newlines. The head's last record
    may be cut short, so it does not vote."""
    for delim in ("\t", ",", "|", ";"):
        try:
            records = [r for r in itertools.islice(csv.reader(io.StringIO(head, newline=""), delimiter=delim), 21)
                       if any(f.strip() for f in r)]
        except csv.Error:
            continue
        if len(records) < 2:
            return None
        counts = [len(r) for r in records[:-1] or records]
        if counts[0] >= 2 and all(c == counts[0] for c in counts):
            return delim
    return None


def _typed(value: str):
    if value == "":
        return None
    if _NUM.match(value):
        return float(value) if "." in value else int(value)
    return value


def sample(text: str, ctx: Context) -> TransformResult:
    """Transform entry point."""
    delim = delimiter_of(text[:8192])
    if delim is None:
        return TransformResult(text, TRANSFORM_ID, notes=["not delimited text"])
    lines = text.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    # records -> the original line span they came from (a quoted field may hold a newline)
    reader = csv.reader(io.StringIO("\n".join(lines), newline=""), delimiter=delim)
    spans: list[tuple[int, int]] = []
    records: list[list[str]] = []
    prev = 0
    try:
        for rec in reader:
            spans.append((prev, reader.line_num - 1))
            records.append(rec)
            prev = reader.line_num
    except csv.Error as exc:
        return TransformResult(text, TRANSFORM_ID, notes=[f"csv parse error: {exc}"])
    if len(records) < MIN_ROWS + 1:
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=["short table"])
    header, rows = records[0], records[1:]
    width = len(header)
    dicts = []
    for rec in rows:
        d = {h: _typed(rec[j]) if j < len(rec) else None for j, h in enumerate(header)}
        if len(rec) != width:
            d["__width__"] = f"{len(rec)} fields (header has {width})"
        dicts.append(d)
    why = json_crusher.anomalies(dicts, ctx.intent)
    for i, d in enumerate(dicts):
        if "__width__" in d:
            why.setdefault(i, []).append("ragged row")
    n = len(rows)
    keep = set(range(min(HEAD_ROWS, n))) | set(range(n - TAIL_ROWS, n)) | set(why)
    schema = json_crusher.rows_schema([{k: v for k, v in d.items() if k != "__width__"} for d in dicts])
    out = [f"# {n} rows, {len(keep)} shown (first {HEAD_ROWS}, last {TAIL_ROWS}, "
           f"anomalous {len(why)}); columns: {schema}"]
    a, b = spans[0]
    out.extend(lines[a:b + 1])
    removals: list[Removal] = []
    run: list[int] = []
    for i in range(n + 1):
        if i < n and i not in keep:
            run.append(i)
            continue
        if run:
            first, last = spans[run[0] + 1][0], spans[run[-1] + 1][1]
            removals.append(Removal("table rows sampled out (no anomaly)", last - first + 1,
                                    first + 1, last + 1, lines[first][:120]))
            run = []
        if i < n:
            a, b = spans[i + 1]
            out.extend(lines[a:b + 1])
    return TransformResult("\n".join(out) + ("\n" if trailing else ""), TRANSFORM_ID,
                           removals=removals, notes=[f"{n} rows, {len(keep)} kept"])
