"""The one omission-marker contract (issue 29): how an emission says which original lines it left out.

One form, made and read only here:

    [40 more lines L41-80]
    [1 more line L7]
    [58 more lines L2-59 like 'step <N>: processing shard-<N> of dataset alpha'; <N> 2…59]

`N` is how many original lines the marker stands for, `L a-b` the 1-based line range of the original
it stands for, and an optional `like '<template>'` names the template the omitted lines share (the
salience model's, observe/rarity.py) with the range of what varied. The bare legacy form
`[N more lines]` (no range) is still read, for emissions that cannot know the range (the huge
stage reads a spool it never holds whole).

The contract (check() enforces it; render() makes only output that keeps it):
- at most one marker per contiguous omitted run, placed exactly where the run was;
- kept lines + every marker's N == the original's line count;
- a marker's range is the run between the kept line above it and the kept line below it, so no
  marker refers to lines it is not adjacent to, and none says "the lines above";
- kept lines are the original's lines, in order (a transform may have stripped ANSI or resolved
  a redraw; it may not rewrite them);
- a short run that costs no more tokens shown than its marker is shown (cheaper_shown).
A family whose kept lines are not the original's one for one (git's commit header carrying its
fields, a test run's `N passed` tally) marks its own cut in the same form; check_ranged() checks
what its markers claim (ranged, in order, inside the original).

Not responsible for choosing which lines to keep (observe/rarity.py and the families do), nor for
the recovery footer (guard.py) that follows every lossy emission.
Invariant: pure functions; render() and align() are O(lines · log lines).
"""

from __future__ import annotations

import re
from bisect import bisect_left

from capsule.ground import tokens

# ANSI escapes, which a transform may strip from a line it keeps (transforms/basic.py strips with this one).
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
MARKER_RE = re.compile(r"^\[(\d+) more lines?(?: L(\d+)(?:-(\d+))?(?: like .*)?)?\]$")
SHOW_UP_TO = 3          # a run this short is shown rather than marked when its lines are shorter
LIKE_MAX = 160          # characters of a template a marker quotes
# A transform's note saying its cut is already marked in this form by the family itself (a
# streaming filter that rewrites lines: filters/streaming.py): check_ranged() judges it
RANGED_NOTE = "markers ranged"


def marker(n: int, start: int | None = None, end: int | None = None, like: str | None = None) -> str:
    """The marker for `n` omitted lines, original lines start..end (1-based, inclusive)."""
    word = "line" if n == 1 else "lines"
    if start is None:
        return f"[{n} more {word}]"
    where = f"L{start}" if end is None or end == start else f"L{start}-{end}"
    what = ""
    if like:
        like = like if len(like) <= LIKE_MAX else like[:LIKE_MAX - 1] + "…"
        what = f" like {like}"
    return f"[{n} more {word} {where}{what}]"


def parse(line: str) -> tuple[int, int | None, int | None] | None:
    """(n, start, end) of a marker line, or None for any other line."""
    m = MARKER_RE.match(line.strip())
    if m is None:
        return None
    n = int(m.group(1))
    if m.group(2) is None:
        return n, None, None
    start = int(m.group(2))
    return n, start, int(m.group(3)) if m.group(3) else start


def render(lines: list[str], shown: dict[int, str], like=None) -> list[str]:
    """The emission's lines: for each original index in `shown` (0-based), its shown text, in order;
    for each run of original lines not in `shown`, one marker. `like(start, stop)` (0-based,
    stop exclusive) may name what the run's lines share, or return None."""
    out: list[str] = []
    prev = -1
    for i in sorted(shown) + [len(lines)]:
        if i > prev + 1:
            a, b = prev + 1, i           # the omitted run [a, b)
            said = marker(b - a, a + 1, b, like(a, b) if like and b - a > 1 else None)
            if cheaper_shown(lines[a:b], said):
                out += [shown_form(ln) for ln in lines[a:b]]     # no marker costlier than its lines
            else:
                out.append(said)
        if i < len(lines):
            out.append(shown[i])
        prev = i
    return out


def cheaper_shown(run: list[str], said: str) -> bool:
    """Whether a short omitted run costs no more tokens shown than its marker `said` does."""
    if len(run) > SHOW_UP_TO:
        return False
    shown = "\n".join(shown_form(ln) for ln in run)
    if len(shown) <= len(said):
        return True             # (no tokenizer asked: a text no longer than the marker is no dearer)
    return len(shown) <= 4 * len(said) and tokens.count(shown) <= tokens.count(said)


def check(total: int, emitted: list[str], original_markers: int = 0) -> str | None:
    """None when `emitted` (the emission's lines, footer excluded) keeps the contract for an
    original of `total` lines, else why not. The first `original_markers` marker-shaped lines
    are read as kept lines (the original itself held them)."""
    pos, seen = 1, 0
    for line in emitted:
        m = parse(line)
        if m is None or seen < original_markers:
            seen += m is not None
            pos += 1
            continue
        n, start, end = m
        if start is not None:
            if start != pos:
                return f"marker {line!r} is not where its lines were (line {pos})"
            if end - start + 1 != n:
                return f"marker {line!r}: its range does not hold {n} lines"
        pos += n
    if pos - 1 != total:
        return f"kept lines and markers make {pos - 1} lines, the original has {total}"
    return None


def check_ranged(total: int, emitted: list[str], original_markers: int = 0) -> str | None:
    """None when every marker an emission added (the first `original_markers` marker-shaped
    lines are the original's) is ranged, its range holds its N lines inside an original of
    `total` lines, and the ranges come in order without overlapping, else why not. For a family
    whose kept lines are not the original's one for one (a commit header carrying its fields, a
    count line): check() cannot count those, this checks what the markers claim."""
    seen, after = 0, 0
    for line in emitted:
        m = parse(line)
        if m is None:
            continue
        if seen < original_markers:
            seen += 1
            continue
        n, start, end = m
        if start is None:
            return f"marker {line!r} has no range"
        if end - start + 1 != n:
            return f"marker {line!r}: its range does not hold {n} lines"
        if start <= after or end > total:
            return f"marker {line!r} overlaps the one before it or passes the original's {total} lines"
        after = end
    return None


def _norms(line: str) -> list[str]:
    """What a transform may show for one original line: itself, without ANSI, its last redraw frame."""
    out = [line]
    plain = ANSI_RE.sub("", line)
    if plain != line:
        out.append(plain)
    body = plain[:-1] if plain.endswith("\r") else plain
    if "\r" in body:
        frames = [f for f in body.split("\r") if f.strip()]
        out.append(frames[-1] if frames else "")
    return out


def shown_form(line: str) -> str:
    """How an original line is shown when it is put back: without ANSI, its last redraw frame."""
    return _norms(line)[-1]


# What a family appends to a kept line or prints between kept lines to say what it folded: read as
# no original line (the markers render() writes say it instead, in the one form).
_ANNOTATION = re.compile(r"\s+(?:\(x\d+\)|\[×\d+(?: [^\]]*)?\]|\(\+\d+ more [^)]*\))$")
_SYNTHESISED = re.compile(r"^\s*(?:\[.*\b(?:more|omitted|repeat\w*|lines?|times)\b.*\]|\(\+\d+ more .*\)"
                          r"|\.\.\.|…)\s*$")


def align(original: list[str], emitted: list[str]) -> dict[int, str] | None:
    """Which original lines (0-based) an emission shows, with the text shown for each (annotations
    a family appended removed); the emission's marker and fold lines stand for no line. None when
    an emitted line is neither an original line nor a marker (a transform that rewrote the text):
    then no run can be told apart and the emission is not re-marked."""
    where: dict[str, list[int]] = {}
    joined = "\n".join(original)
    if "\x1b" not in joined and "\r" not in joined:
        # most outputs: a line is shown only as itself, and only the lines shown need an index
        wanted = set(emitted) | {_ANNOTATION.sub("", ln) for ln in emitted}
        for i, line in enumerate(original):
            if line in wanted:
                where.setdefault(line, []).append(i)
    else:
        for i, line in enumerate(original):
            for norm in _norms(line):
                where.setdefault(norm, []).append(i)
    shown: dict[int, str] = {}
    pos = 0
    for line in emitted:
        text = line
        at = where.get(text)
        if at is None:
            bare = _ANNOTATION.sub("", line)
            if bare != line:
                at = where.get(bare)
                text = bare
        k = bisect_left(at, pos) if at else 0
        if at and k < len(at):
            shown[at[k]] = text
            pos = at[k] + 1
            continue
        if _SYNTHESISED.match(line):
            continue
        return None
    return shown
