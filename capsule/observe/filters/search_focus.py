"""A search with context cut by the task (issue 29.3): grep/rg output that shows regions (`-C/-A/-B`,
git grep -W, the client's own Grep with context) and is past its view size keeps, whole, the match
groups the task's cues point at; every other run of lines is one marker of the one contract.

Responsible for splitting the output into match groups (a file's consecutive numbered lines between
`--` separators), for picking the groups the cues point at (the session's failing frames, exact
names, else the shared BM25 ranking of observe/cues.py, the same one a read's regions use) within
the regions' token budget, and for rendering (markers.render: original lines, one ranged marker per
omitted run, so each run is one `ctx expand HANDLE --lines A-B` away; the pipeline archives the
original). Not responsible for the policy (the lines it protects are handed in), for reading the
cues (the engine hands them in) nor for a search without context or cues (search_stream.py's cut).
Invariant: deterministic; a kept group is whole and every kept line is the tool's own; the tool's
errors and stats lines and every protected line are kept; kept lines + markers' counts == total;
no group the cues point at -> None (the caller's own cut stands).
"""

from __future__ import annotations

from collections import namedtuple

from capsule.ground import tokens
from capsule.observe import cues as task
from capsule.observe import markers
from capsule.observe.transform_types import Removal

MAX_GROUP_LINES = 400      # a group longer than this is no answer to point at (it is most of a file)
REASON = "match group the task's cues do not point at"

Group = namedtuple("Group", ("first", "last", "path", "lo", "hi"))   # 0-based output lines; the file's line numbers


def groups(entries) -> list[Group]:
    """The match groups of a parsed search (search_stream.parse entries): runs of one file's hits whose
    line numbers follow each other on consecutive output lines."""
    out: list[Group] = []
    cur = None
    for e in entries:
        if e.kind != "hit" or not e.no:
            if cur is not None:
                out.append(cur)
            cur = None
            if e.kind == "hit":      # an unnumbered hit: a group of its own line
                out.append(Group(e.lineno - 1, e.lineno - 1, e.path, 0, 0))
            continue
        no = int(e.no)
        if cur is not None and e.path == cur.path and no == cur.hi + 1 and e.lineno - 1 == cur.last + 1:
            cur = cur._replace(last=e.lineno - 1, hi=no)
        else:
            if cur is not None:
                out.append(cur)
            cur = Group(e.lineno - 1, e.lineno - 1, e.path, no, no)
    if cur is not None:
        out.append(cur)
    return out


def pick(lines: list[str], found: list[Group], cue: task.Cues) -> list[tuple[Group, str]]:
    """The groups the cues point at, in priority order (observe/cues.point: a failing frame's line,
    an exact name that singles groups out, else the terms), within the regions' budget (the first
    always)."""
    found = [g for g in found if g.last - g.first < MAX_GROUP_LINES]
    texts = ["\n".join(lines[g.first:g.last + 1]) for g in found]
    out: list[tuple[Group, str]] = []
    used = 0
    for i, why in task.point(texts, cue, [(g.path, g.lo, g.hi) for g in found]):
        g = found[i]
        cost = tokens.count(texts[i])
        if out and used + cost > task.REGION_BUDGET_TOKENS:
            continue
        out.append((g, why))
        used += cost
    return out


def cut(lines: list[str], entries, cue: task.Cues | None, protected=frozenset()) -> tuple[list[str], list] | None:
    """(the emission's lines, removals) or None when the cues point at no group here. `protected`:
    the output's line numbers (1-based) the policy keeps (verbatim-class, pinned): kept whatever."""
    if task.empty(cue):
        return None
    chosen = pick(lines, groups(entries), cue)
    if not chosen:
        return None
    keep: set[int] = set()
    for g, _ in chosen:
        keep.update(range(g.first, g.last + 1))
    for e in entries:
        i = e.lineno - 1
        if e.kind in ("error", "stats") or e.lineno in protected:
            keep.add(i)
        elif e.kind == "head" and i + 1 in keep:
            keep.add(i)                               # rg --heading: the file's name above its kept group
        elif e.kind == "sep" and i - 1 in keep and i + 1 in keep:
            keep.add(i)
    if len(keep) >= len(lines):
        return None
    out = markers.render(lines, {i: lines[i] for i in sorted(keep)})
    removals = []
    for line in out:
        m = markers.parse(line)
        if m is not None and m[1] is not None:
            n, a, b = m
            removals.append(Removal(REASON, n, a, b, lines[a - 1][:120]))
    return out, removals
