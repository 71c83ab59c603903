"""The search packer: ranked files -> `file:line:snippet` lines within a token budget.

Not responsible for ranking by the query (index.py) nor by the task's cues (observe/cues.py:
point(), the one ranking the shell search's cut uses too), nor for reading whole files (reader.py).
Invariant: the packed answer never exceeds its token budget; when hits are left out, one line
says how many and how to get them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from capsule.ground.tokens import count
from capsule.retrieve import workspace
from capsule.observe.cues import DEFINES_BEFORE, Cues, empty, names_in, point, same_file
from capsule.retrieve.index import Hit, query_terms

SNIPPET_CHARS = 160
SCAN_BYTES = 512 << 10
LINES_PER_FILE = 2
CANDIDATES = 24          # occurrences per term looked at when choosing lines
RANK_CHARS = 8 << 10     # of each candidate file the task's words are ranked over (near the query's lines)
NEAR = 3                 # lines either side of a query's candidate line ranked with it
POINTED_LINES = 10       # lines of a file the task points at shown whole (beside the query's best)
MAX_BLOCK = 400          # a definition longer than this is most of a file: a window is shown instead
WINDOW = 12              # lines either side of an anchor outside any definition
_HEADER = re.compile(r"\s*(?:(?:async|export|pub|public|private|protected|static|abstract|default)\s+)*"
                     + DEFINES_BEFORE + r"\w")      # a line that starts a definition
WHOLE_CHARS = 2000       # a pointed line longer than this is a blob, not a line to read whole


def best_lines(text: str, terms: list[str], per_file: int = LINES_PER_FILE) -> list[tuple[int, str]]:
    """The lines matching the most distinct query terms (ties: earliest), as (line number, text)."""
    low_terms = [t for t in terms if len(t) > 1] or terms
    low = text.lower()
    starts = _starts(low, low_terms)
    scored: list[tuple[int, int, str]] = []
    line_no, last = 1, 0
    for start in sorted(starts):
        line_no += low.count("\n", last, start)
        last = start
        end = low.find("\n", start)
        end = len(low) if end < 0 else end
        score = sum(1 for t in low_terms if t in low[start:end])
        scored.append((-score, line_no, text[start:end].rstrip("\r")))
    scored.sort()
    picked = sorted(scored[:per_file], key=lambda s: s[1])
    return [(n, line) for _s, n, line in picked]


def _starts(low: str, low_terms: list[str]) -> set[int]:
    """Where the candidate lines start: the first CANDIDATES occurrences of each term (C-speed find)."""
    starts: set[int] = set()
    for t in low_terms:
        pos = low.find(t)
        for _ in range(CANDIDATES):
            if pos < 0:
                break
            start = low.rfind("\n", 0, pos) + 1
            starts.add(start)
            nxt = low.find("\n", pos)
            if nxt < 0:
                break
            pos = low.find(t, nxt)
    return starts


def near(text: str, terms: list[str]) -> str:
    """The parts of a file around the query's candidate lines (NEAR lines either side), at most
    RANK_CHARS: what the task's words are ranked over (the hits the query found, not the file's head)."""
    low_terms = [t for t in terms if len(t) > 1] or terms
    out: list[str] = []
    size, last = 0, -1
    for start in sorted(_starts(text.lower(), low_terms)):
        a = start
        for _ in range(NEAR):
            a = text.rfind("\n", 0, max(0, a - 1)) + 1
        b = start
        for _ in range(NEAR + 1):
            nxt = text.find("\n", b)
            b = len(text) if nxt < 0 else nxt + 1
        a = max(a, last)
        if a < b:
            out.append(text[a:b])
            size += b - a
            last = b
        if size >= RANK_CHARS:
            break
    return "".join(out)[:RANK_CHARS]


def snippet(line: str) -> str:
    s = line.strip()
    return s if len(s) <= SNIPPET_CHARS else s[: SNIPPET_CHARS - 1] + "…"


def _cost(text: str) -> int:
    """A cheap upper estimate of tokens (code runs ~3.5-4 chars a token); the total is counted exactly."""
    return len(text) // 3 + 2


def _load(root: Path, hit: Hit) -> str | None:
    try:
        real = workspace.resolve(root, hit.path)      # never follow a link out of the workspace
        with os.fdopen(workspace.open_inside(root, real, hit.path), "rb") as fh:
            return fh.read(SCAN_BYTES).decode("utf-8", "replace")
    except (OSError, workspace.WorkspaceError):
        return None


def pack(root: Path, hits: list[Hit], query: str, budget: int = 800, cue: Cues | None = None,
         k: int | None = None) -> str:
    """`path:line:snippet` lines for the hits, best first, that fit in `budget` tokens. With the task's
    cues (observe/cues.py) the `k` shown are chosen from all `hits`: those the cues point at first,
    their pointed lines whole (within the budget), then the rest in the index's order."""
    if cue is not None and not empty(cue):
        return _pack_by_task(root, hits, query, budget, cue, len(hits) if k is None else k)
    terms = query_terms(query)
    groups: list[list[str]] = []
    used = 0
    left = 0
    for i, hit in enumerate(hits):
        text = _load(root, hit)
        if text is None:
            continue
        rows = [f"{hit.path}:{n}:{snippet(line)}" for n, line in best_lines(text, terms)]
        rows = rows or [f"{hit.path}:1:(path match)"]
        cost = _cost("\n".join(rows))
        if used + cost > budget - 12:   # keep room for the "more" line
            left = len(hits) - i
            break
        groups.append(rows)
        used += cost
    return _render(groups, left, hits, query, budget, "narrow the query or raise k")


def _render(groups: list[list[str]], left: int, hits: list[Hit], query: str, budget: int, how: str,
            first: str = "") -> str:
    while groups and count("\n".join(r for g in groups for r in g)) > budget - 12 - count(first):
        groups.pop()                     # the estimate was low: drop the weakest file
        left += 1
    if not groups:
        return f"no matches for {query!r}" if not hits else f"[{len(hits)} files matched; raise the budget to see them]"
    out = [r for g in groups for r in g] + ([first] if first else [])
    if left:
        out.append(f"[{left} more files matched; {how}]")
    return "\n".join(out)


def _pack_by_task(root: Path, hits: list[Hit], query: str, budget: int, cue: Cues, k: int) -> str:
    """The cut by the task: cues.point() over the candidates' texts orders them; each pointed file
    shows its pointed lines (a failing frame's line, the line defining or first holding a name the
    cues say) beside the query's best lines, all whole while they take under half the budget."""
    terms = query_terms(query)
    found = [(h, t) for h in hits if (t := _load(root, h)) is not None]
    texts = [t for _, t in found]
    pointed = point(texts, cue, [(h.path, 1, t.count("\n") + 1) for h, t in found],
                    ranked=[near(t, terms) for t in texts])
    order = [i for i, _ in pointed] + [i for i in range(len(found)) if i not in {j for j, _ in pointed}]
    why = dict(pointed)
    groups: list[list[str]] = []
    said: list[str] = []
    used = 0
    for i in order[:k]:
        hit, text = found[i]
        best = dict(best_lines(text, terms))
        whole = dict(_pointed_lines(text, hit.path, cue, terms)) if i in why else {}
        shown = sorted({**best, **whole}.items())
        rows = [f"{hit.path}:{n}:{line[:WHOLE_CHARS].strip()}" for n, line in shown]
        if i not in why or used + _cost("\n".join(rows)) > budget // 2:     # a pointed file's lines whole while they fit
            rows = [f"{hit.path}:{n}:{snippet(line)}" for n, line in shown]
        rows = rows or [f"{hit.path}:1:(path match)"]
        cost = _cost("\n".join(rows))
        if used + cost > budget - 40:
            break
        groups.append(rows)
        if i in why:
            said.append(f"{hit.path} ({why[i]})")
        used += cost
    first = f"[first by the task: {'; '.join(said)}]" if said else ""
    return _render(groups, len(found) - len(groups), hits, query, budget,
                   "ctx_search with a larger k shows them", first)


def _pointed_lines(text: str, path: str, cue: Cues, terms: list[str]) -> list[tuple[int, str]]:
    """The lines of one file the cues point at, at most POINTED_LINES: its anchors (its failing frames'
    lines; for each name the cues say that it holds, the line defining it, else its first line holding
    it; with neither, its line holding the most of the cue's terms), then the query's lines inside each
    anchor's block (the definition it starts or sits in, else WINDOW lines either side)."""
    lines = text.split("\n")
    anchors = [no for p, no in cue.frames if same_file(p, path) and 1 <= no <= len(lines)]
    for name in names_in(text, cue):
        whole = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
        held = [n for n, line in enumerate(lines, 1) if name in line and whole.search(line)]
        defines = re.compile(DEFINES_BEFORE + re.escape(name) + r"\b")
        defs = [n for n in held if defines.search(lines[n - 1])]
        if held:
            anchors.append((defs or held)[0])
    if not anchors:
        anchors = [n for n, _ in best_lines(text, list(cue.terms), 1)]
    anchors = list(dict.fromkeys(anchors))
    out = {n: lines[n - 1] for n in anchors[:POINTED_LINES]}
    low_terms = [t for t in terms if len(t) > 1] or terms
    for n in anchors:
        first, last = _block(lines, n)
        for m in range(first, last + 1):
            if len(out) >= POINTED_LINES:
                return sorted(out.items())
            if any(t in lines[m - 1].lower() for t in low_terms):
                out.setdefault(m, lines[m - 1])
    return sorted(out.items())


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block(lines: list[str], n: int) -> tuple[int, int]:
    """The definition line `n` starts or sits in (by indentation: up to the next line indented no
    deeper than its header), else WINDOW lines either side; at most MAX_BLOCK lines."""
    inner = _indent(lines[n - 1])
    for head in range(n, max(0, n - MAX_BLOCK), -1):
        line = lines[head - 1]
        if _HEADER.match(line) and (head == n or _indent(line) < inner):
            base, end = _indent(line), head
            while end < len(lines) and end - head < MAX_BLOCK and (not lines[end].strip() or _indent(lines[end]) > base):
                end += 1
            if end >= n:
                return head, end
            break
    return max(1, n - WINDOW), min(len(lines), n + WINDOW)
