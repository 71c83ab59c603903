"""The salience model (issue 29): every output's lines reduced to templates, grouped and scored, so
the line that differs is kept whatever family the output belongs to, and routine lines fold.

A line's template is the line with its numbers, ids, hashes, paths, urls and timestamps masked
(template()/templates(); the log family, every door and content/templates.py's folds, which
read a line back as its template's words and slots, slot_values(), use these: one notion of a
line's template). A line is salient when it is
rare in this output: its template seen once among a repetitive rest, a one-token variant of a
frequent template, a level above the dominant one, a categorical value seen once in a column of
records (a status), or a number far outside its column (anomalies.py scores records of four
fields and more; narrow tables such as `du`'s size/path, and tables under a header of capitals
read by their columns' gutters, are scored here). Salient lines are kept
whole with a neighbour either side. The rest is cut by shape(): a template's first line stays and
the run of its repeats becomes one marker naming the template and the range of what varied
(markers.py, the one marker contract); lines of no repeated template fill what remains of the
line budget from the head and the tail.

Why not drain3: it mines templates one line at a time in Python with a mutable prefix tree (its
result depends on its state and configuration), ~10x the cost of these masks, which run as one
regex pass over the distinct digit-masked lines (digits.masked) and are deterministic by construction.
Not responsible for a family's own rules (they refine what this keeps: pytest's summary), nor for
markers' form (markers.py), nor for verbatim-class lines (verbatim.py; the pipeline's guard).
Invariant: pure and deterministic; linear in the lines (anomalies.py's caps); indices are 0-based.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache

from capsule.observe import anomalies, digits, keep, markers

NEIGHBOURS = 1          # lines kept either side of a salient line
FOLD_MIN = 3            # a template with this many lines folds to its first and a marker
MIN_ROWS = 20           # rows of one width before a narrow table's columns are judged
NARROW = range(2, anomalies.MIN_FIELDS)   # field counts anomalies.py leaves to this module
MAX_VARIED = 2          # what-varied ranges a marker names

_MASKS = [
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+"), "<url>"),
    (re.compile(r"(?:\.{0,2}/[\w.@%+-]+){2,}/?"), "<path>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<ts>"),
    (re.compile(r"\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b"), "<date>"),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{7,64}\b"), "<hex>"),
    (re.compile(r"\b[A-Za-z]+[-_]?\d+[A-Za-z0-9_-]*\b"), "<id>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]
# A mask can match only where its text holds one of these (None: no such test): a whole text
# without them skips that mask's pass.
_NEEDED = ("://", "/", "-", None, ":", "-", ".", None, None, None)

# An HTTP request as access logs write it (Common/Combined Log Format, nginx, python's
# http.server): the target is the variable part; the method, protocol and status are the kind
# of request, so a 404 or a POST never shares a template with the 200 GETs around it.
REQUEST = re.compile(r'"([A-Z]{3,7}) (\S+) (HTTP/[\d.]+)" (\d{3})\b')
_HOLE = "\x00"
# What a template writes where it masked: its slots (content/templates.py reads a line back as its
# template's words and these slots' values).
SLOT = re.compile("|".join(re.escape(r) for r in dict.fromkeys([r for _, r in _MASKS] + ["<target>"])))
_MASK_OF = {r: pat.pattern for pat, r in _MASKS} | {"<target>": r"\S+"}
# A table's header: three or more words of capitals (`%CPU`, `CONTAINER ID`, `RESTARTS`).
_HEADER = re.compile(r"\s*[A-Z%][A-Z0-9%_/()-]*(?:\s+[A-Z%][A-Z0-9%_/()-]*){2,}\s*$")
_INK = re.compile(r"\S")
_INK_BYTES = bytes(48 if c in (9, 13, 32) else 49 for c in range(256))    # blank -> "0", ink -> "1"
_LETTER = re.compile(r"[A-Za-z]")
MAX_TABLE_WIDTH = 512   # columns past this are a row's free text (a command line), not fields
HEAD_ROWS = 64          # a table's first rows, which say what each column can be
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]i?B?|B)?$")
_UNIT = {"": 1, "B": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_NUMBER = re.compile(r"\d+")
_ZEROS = re.compile(r"0+")


def template(line: str) -> str:
    """The line with its variable parts masked."""
    t = line.strip()
    req = REQUEST.search(t)
    if req:
        t = t[:req.start()] + _HOLE + t[req.end():]
    for pat, repl in _MASKS:
        t = pat.sub(repl, t)
    if req:
        t = t.replace(_HOLE, f'"{req.group(1)} <target> {req.group(3)}" {req.group(4)}', 1)
    return t


def templates(lines: list[str]) -> list[str]:
    """[template(line) for line in lines] (lines without a newline). A template holds no ASCII
    digit and every mask reads a digit only as a digit, so lines that differ only in their digits
    share a template: it is worked out once per distinct digit-masked line (digits.masked), each
    mask one substitution over them joined (no mask spans a newline, which is a word boundary as
    a line's end is). A line holding an HTTP request (its status and protocol stay in the
    template) gets template() itself."""
    stripped = [ln.strip() for ln in lines]
    masked = digits.masked(stripped)
    if not stripped or masked is None:
        return [template(ln) for ln in lines]
    distinct = list(dict.fromkeys(masked))
    joined = "\n".join(distinct)
    for (pat, repl), needle in zip(_MASKS, _NEEDED):
        if needle is None or needle in joined:
            joined = pat.sub(repl, joined)
    template_of = dict(zip(distinct, joined.split("\n")))
    out = list(map(template_of.__getitem__, masked))
    for i, t in enumerate(stripped):
        if "HTTP/" in t and REQUEST.search(t):
            out[i] = template(lines[i])
    return out


def slot_values(tpl: str, line: str) -> list[str] | None:
    """What the line holds at each slot of its template `tpl`, in order; None when the line does
    not read as that template (a template's literal text is the line's, so its own line always does)."""
    m = _reader(tpl).fullmatch(line.strip())
    return list(m.groups()) if m else None


@lru_cache(maxsize=1024)
def _reader(tpl: str) -> re.Pattern:
    # each slot tries its own mask first (a timestamp's space is not a separator), then any text
    slots = [f"({_MASK_OF.get(s, '')}|.+?)" for s in SLOT.findall(tpl)] + [""]
    return re.compile("".join(re.escape(lit) + slot for lit, slot in zip(SLOT.split(tpl), slots)))


def salient(lines: list[str]) -> set[int]:
    """The rare lines of this output (see the module's header), without their neighbours."""
    return set(_salient("\n".join(lines)))


@lru_cache(maxsize=4)
def _salient(text: str) -> frozenset[int]:
    # Asked twice of one output (the generic cut, then the pipeline's pass under it): worked out once.
    # keep.py's analysis of a passing run (cached: the families and the guard ask it of the same text)
    # holds anomalies.py's record rules; its failing-run rules (rare templates, one-token variants)
    # are added for every run: a rare line is salient whatever the exit status.
    lines, masked = keep.lines_of(text, 0)
    lines = list(lines)
    masked = list(masked) if masked is not None else None
    return frozenset(set(keep.extra(text, 0)) | anomalies.rare_lines(lines, masked) | _narrow_outliers(lines, masked)
                     | _table_outliers(lines))


def with_neighbours(found: set[int], total: int, n: int = NEIGHBOURS) -> set[int]:
    return {j for i in found for j in range(max(0, i - n), min(total, i + n + 1))}


def _narrow_outliers(lines: list[str], masked: list[str] | None = None) -> set[int]:
    """A table of two or three columns (`du`: size and path; `wc -l`; `sort | uniq -c`): a number
    far above its column's median, a value seen once in a column one value dominates. Sizes with
    a unit (`38G`, `4.0K`) are read as numbers."""
    rows: dict[int, list[int]] = defaultdict(list)
    masked = masked or digits.masked(lines) or lines
    width = {m: m.count("\t") + 1 if "\t" in m else len(m.split()) for m in dict.fromkeys(masked)}
    for i, m in enumerate(masked):      # a line and its digit-masked form have one width
        if width[m] in NARROW:
            rows[width[m]].append(i)
    keep: set[int] = set()
    for width, idx in rows.items():
        if len(idx) < MIN_ROWS:
            continue
        split = [lines[i].split("\t") if "\t" in lines[i] else lines[i].split() for i in idx]
        columns = []
        for k in range(width):
            col = [r[k].strip() if k < len(r) else "" for r in split]
            sized = [_size(v) for v in col]
            columns.append(col if None in sized else sized)
        keep |= anomalies.field_outliers(idx, columns)
    return keep


def _table_outliers(lines: list[str]) -> set[int]:
    """A table under a header of capitals (`kubectl get`, `docker ps`, `ps aux`, `systemctl
    list-units`), judged by its columns: the gutters are the positions blank in the header and every
    row, whatever a row's words (`1 (3d ago)` beside `0` splits no record), so each column is one
    field; a value seen once in a column one value dominates, a number (or size) far outside its
    column. A status is also judged by its first word (`Exited (137) 4 minutes ago` among `Up 2
    days`, `Up 5 hours`: one `Exited` among `Up`s). A header is the first line or one after a blank
    line; its table runs to the next blank line."""
    keep: set[int] = set()
    starts = [0] + [i + 1 for i, ln in enumerate(lines) if not ln.strip()]
    for h in starts:
        if h >= len(lines) or not _HEADER.match(lines[h]):
            continue
        end = h + 1
        while end < len(lines) and lines[end].strip():
            end += 1
        if end - h - 1 < MIN_ROWS or any("\t" in lines[i] for i in range(h, end)):
            continue
        used = 0
        for i in range(h, end):              # the positions any line prints a character at, as bits
            line = lines[i][:MAX_TABLE_WIDTH]
            ink = line.encode().translate(_INK_BYTES) if line.isascii() else \
                _INK.sub("1", line).replace(" ", "0").encode()
            used |= int(ink[::-1] or b"0", 2)
        spans = [(m.start(), m.end()) for m in re.finditer("1+", bin(used)[2:][::-1])]
        if len(spans) < 3:
            continue
        idx = list(range(h + 1, end))
        columns = []
        for a, b in spans:
            # Its first rows say what a column can be (sizes, a few values, a few first words): a
            # column that is none of these (names, ids, free text) is not cut out of every row.
            head = [lines[i][a:b].strip() for i in idx[:HEAD_ROWS]]
            sized = None not in map(_size, head)
            few = len(set(head)) <= anomalies.CATEGORICAL
            firsts = [v.split(" ", 1)[0] for v in head]
            few_firsts = firsts != head and len(set(firsts)) <= anomalies.CATEGORICAL
            if not (sized or few or few_firsts):
                continue
            col = [lines[i][a:b].strip() for i in idx]
            values = [_size(v) for v in col] if sized and _LETTER.search("".join(col)) else col
            columns.append(col if None in values else values)      # (plain numbers need no reading)
            if few_firsts:
                columns.append([v.split(" ", 1)[0] for v in col])
        keep |= anomalies.field_outliers(idx, columns)
    return keep


def _size(value: str) -> str | None:
    m = _SIZE.match(value)
    if m is None:
        return None
    unit = (m.group(2) or "").rstrip("B").rstrip("i")
    return repr(float(m.group(1)) * _UNIT[unit])


def describe(lines: list[str], masked: list[str] | None, start: int, stop: int) -> str | None:
    """What the run lines[start:stop] shares, for its marker: `'<template>'; 2…59` (the numbers that
    varied), or None for a short run or one whose lines differ in more than their digits (`masked`:
    digits.masked(lines), so the check costs no masking)."""
    if stop - start < FOLD_MIN or masked is None or not lines[start].strip():
        return None
    if len({_ZEROS.sub("0", m) for m in set(masked[start:stop])}) != 1:    # (`9` and `10` alike)
        return None
    nums = [_NUMBER.findall(lines[i]) for i in range(start, stop)]
    varied = []
    for col in zip(*nums):
        values = sorted(set(col), key=lambda v: (int(v), v))
        if len(values) > 1 and f"{values[0]}…{values[-1]}" not in varied:
            varied.append(f"{values[0]}…{values[-1]}")
    return f"'{template(lines[start])}'" + (f"; {', '.join(varied[:MAX_VARIED])}" if varied else "")


def choose(lines: list[str], budget: int, pinned: set[int], tpls: list[str], rare: set[int] | None = None) -> set[int]:
    """The lines a cut keeps: the pinned and the salient (with neighbours) whatever the budget;
    then the first and last line, each repeated template's first line, and lines of no repeated
    template from the head and the tail, while the budget lasts."""
    n = len(lines)
    kept = set(pinned) | with_neighbours(salient(lines) if rare is None else set(rare), n)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(tpls):
        groups[t].append(i)
    folded = {i for t, idx in groups.items() if len(idx) >= FOLD_MIN for i in idx[1:]}
    order = [0, n - 1] + sorted(idx[0] for idx in groups.values() if len(idx) >= FOLD_MIN)
    rest = [i for i in range(n) if i not in folded]
    head, tail = rest[:len(rest) // 2], rest[len(rest) // 2:][::-1]
    for a, b in zip(head, tail):
        order += [a, b]
    order += head[len(tail):] + tail[len(head):]
    for i in order:
        if len(kept) >= budget:
            break
        kept.add(i)
    return kept


def shape(text: str, budget: int, pinned: set[int]) -> tuple[str, int]:
    """The salience model's cut of a text over `budget` lines: (emission, lines omitted), with one
    marker per omitted run (markers.render). A text within the budget is returned as it is."""
    lines = text.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    if len(lines) <= budget:
        return text, 0
    tpls = templates(lines)
    kept = choose(lines, budget, pinned, tpls, _salient(text))
    if len(kept) >= len(lines):
        return text, 0
    masked = digits.masked(lines)
    out = markers.render(lines, {i: lines[i] for i in kept}, lambda a, b: describe(lines, masked, a, b))
    return "\n".join(out) + ("\n" if trailing else ""), len(lines) - len(kept)


def under(original: str, emitted: str) -> str | None:
    """The model under a family's cut: the lines `emitted` shows of `original` (markers.align), with
    every salient line of the original (and its neighbours) put back, and each omitted run given one
    marker in the contract's form in place of whatever the family wrote there. None when the family
    rewrote lines (the emission cannot be read as a selection of the original's lines): it stands."""
    lines = original.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    out = emitted.split("\n")
    if out and out[-1] == "":
        out = out[:-1]
    shown = markers.align(lines, out)
    if shown is None:
        return None
    if len(shown) >= len(lines):
        return None             # nothing omitted: the family's lines stand as they are
    for i in _salient(original) - shown.keys():      # the family's cut keeps its own context around them
        shown[i] = markers.shown_form(lines[i])
    masked = keep.lines_of(original, 0)[1]
    masked = list(masked) if masked is not None and len(masked) == len(lines) else None
    body = markers.render(lines, shown, lambda a, b: describe(lines, masked, a, b))
    return "\n".join(body) + ("\n" if trailing else "")
