"""A file view cut by the task (issue 29.3): a source file over the read budget as its outline plus,
whole, the regions the task points at; the one implementation every door's read uses (the read
door's ctx_read through retrieve/focus.py, a `cat FILE`, Claude Code's Read through the hook door and
a proxied file read through the pipeline's read transform, observe/transforms/read.py).

Responsible for picking the file's regions by the task's cues (observe/cues.py: the one cue reader
and BM25 ranking, shared with the search cut) and for the view's lines (markers.render: one ranged
marker per omitted run). Not responsible for the outline itself (observe/content/outline.py), for
archiving the original or the footer that names its handle (the pipeline's guard, or ctx_read's
retrieve/focus.py), nor for where the session's failing frames are kept (retrieve/focus.py).
Invariant: deterministic (same text and cues -> same lines); every kept region is whole and in file
order; kept lines + markers' counts == the file's lines; the view costs at most MAX_VIEW_SHARE of
the file; no region pointed at -> None (the plain outline stands, at no cost when
nothing points).
"""

from __future__ import annotations

from collections import namedtuple

from capsule.ground import tokens
from capsule.ground.lines import split_lines
from capsule.observe import markers
from capsule.observe.cues import REGION_BUDGET_TOKENS, Cues, rank, same_file

MAX_REGION_LINES = 400          # a body longer than this is shown as a window around its hot line
HEADER_ROWS = 4                 # a body's header: at most this many kept rows above it
WINDOW = 12                     # lines either side of a hot line outside any body
# A view past this share of the file's tokens is no cut (a file of short declarations, a marker between
# every few): the plain outline is served. A medium file's view is its regions' REGION_BUDGET_TOKENS
# and its declarations: ~60% of a 4,800-token Go file (benchmarks/data/traffic entire-setup-06).
MAX_VIEW_SHARE = 0.75
Region = namedtuple("Region", ("first", "last", "why"))


def hot_lines(cue: Cues, rel: str | None) -> list[int]:
    """The lines of `rel` the session's failures point at: the cue's own (a read's recalled frames)
    and its frames in this file, newest first, each once."""
    found = list(cue.lines) + [n for p, n in cue.frames if rel and same_file(p, rel)]
    return list(dict.fromkeys(found))


def chunks(outline_removals, kept_rows: list[int]) -> list[tuple[int, int, str]]:
    """(first, last, name) of each elided body, its first line its header: the kept rows just above
    it (a signature over several lines, or a first comment line the outline kept; at most HEADER_ROWS)."""
    kept = set(kept_rows)
    out = []
    for r in outline_removals:
        if not r.reason.startswith("body of ") or r.start is None:
            continue
        first = r.start
        while first - 1 in kept and r.start - first < HEADER_ROWS:
            first -= 1
        out.append((first, r.end, r.reason[8:]))
    return out


def _around(parts, source_lines: list[str], n: int, why: str) -> tuple[Region, Region]:
    """(the short body holding line n whole, else its window; the window): a line's window stands in
    for its body when the body is larger than what is left of the budget."""
    window = Region(max(1, n - WINDOW), min(len(source_lines), n + WINDOW), why)
    p = next((p for p in parts if p[0] <= n <= p[1]), None)
    if p is not None and p[1] - p[0] < MAX_REGION_LINES:
        return Region(p[0], p[1], f"{p[2]} ({why})"), window
    return window, window


def quoted(source_lines: list[str], cue: Cues) -> list[tuple[int, str]]:
    """(line, phrase) of each line holding a phrase the task quoted, the phrases held by fewest lines
    first (a phrase on every other line tells nothing), then in the order said."""
    found = []
    for k, q in enumerate(cue.quotes):
        where = [n for n, line in enumerate(source_lines, 1) if q in line]
        if where:
            found.append((len(where), k, q, where))
    return [(n, q) for _, _, q, where in sorted(found) for n in where]


def regions(source_lines: list[str], parts: list[tuple[int, int, str]], cue: Cues,
            hot: list[int] = ()) -> list[Region]:
    """The regions to show whole, in priority order, within REGION_BUDGET_TOKENS (the first always):
    the session's failing lines, bodies the task names exactly, lines holding what it quoted, else
    what its words point at (BM25)."""
    picked: list[tuple[Region, Region | None]] = []      # (region, what stands in when it is too large)
    for n in hot or cue.lines:                               # the session's failures, newest first
        if 1 <= n <= len(source_lines):
            picked.append(_around(parts, source_lines, n, f"a failure's frame, line {n}"))
    lowered = {x.lower() for x in cue.names}
    for p in parts:                                      # bodies the task names exactly
        leaf = p[2].rsplit(".", 1)[-1]
        if leaf in cue.names or leaf.lower() in lowered:
            picked.append((Region(p[0], p[1], f"{p[2]} (named)"), None))
    for n, q in quoted(source_lines, cue):               # lines holding what the task quoted
        picked.append(_around(parts, source_lines, n, f'quotes "{q}", line {n}'))
    texts = [] if picked else ["\n".join(source_lines[a - 1:b]) for a, b, _ in parts]
    for i in rank(texts, cue, [name for _, _, name in parts]):        # else what the words point at
        p = parts[i]
        picked.append((Region(p[0], p[1], f"{p[2]} (matches)"), None))
    out: list[Region] = []
    used = 0

    def cost(r: Region) -> int | None:
        """The region's tokens, or None when it is too large, already kept or over the budget."""
        if r.last - r.first >= MAX_REGION_LINES or any(o.first <= r.first and r.last <= o.last for o in out):
            return None
        n = tokens.count("\n".join(source_lines[r.first - 1:r.last]))
        return None if out and used + n > REGION_BUDGET_TOKENS else n

    for region, instead in picked:
        for r in (region, instead):
            n = None if r is None else cost(r)
            if n is not None:
                out.append(r)
                used += n
                break
    return out


def cut(source: str, rel: str | None, declarations: set[int], bodies, cue: Cues,
        folds: dict[tuple[int, int], str] | None = None) -> tuple[list[str], list[Region]] | None:
    """(the view's lines, the regions kept whole), or None when the cues point at nothing here. The
    view: the plain read's own declaration lines (`declarations`, 1-based) with the task's regions
    whole, every other run of lines one marker, each shown line as `N: text`. `bodies`: the
    signatures outline (every declaration at every depth), whose elided bodies are the parts ranked.
    `folds`: what the plain read says of a run it folds (an import run's modules, a long signature's
    parameters), by its 1-based (first, last) line: an omitted run holding one says it."""
    lines = split_lines(source)
    picked = regions(lines, chunks(bodies.removals, sorted(shown_rows(bodies.text))), cue, hot_lines(cue, rel))
    if not picked:
        return None
    keep = {n for r in picked for n in range(r.first, r.last + 1)} | declarations
    keep |= {n + 1 for n in keep if n + 2 in keep}        # a one-line gap costs less shown than marked
    shown = {n - 1: f"{n}: {lines[n - 1]}" for n in sorted(keep) if n <= len(lines)}
    def said(a: int, b: int) -> str | None:       # the folds inside an omitted run [a, b), 0-based
        return "; ".join(v for (f, t), v in sorted((folds or {}).items()) if a < f and t <= b) or None

    out = markers.render(lines, shown, said)
    if tokens.count("\n".join(out)) > MAX_VIEW_SHARE * tokens.count(source):
        return None     # a marker between every few short declarations: the plain outline stands
    return out, picked


def summary(rel: str, total: int, picked: list[Region]) -> str:
    """What the view is, said once: the file's size and each region kept whole, with why."""
    kept = ", ".join(f"{r.first}-{r.last} {r.why}" for r in sorted(picked))
    return f"{rel}: declarations of {total} lines with the task's regions whole: {kept}"


def shown_rows(outline_text: str) -> set[int]:
    """The line numbers an outline shows."""
    return {int(head) for head, sep, _ in (row.partition(": ") for row in outline_text.split("\n"))
            if sep and head.isdigit()}
