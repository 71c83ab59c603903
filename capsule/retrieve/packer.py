"""The search packer: ranked files -> `file:line:snippet` lines within a token budget.

Not responsible for ranking (index.py) or reading whole files for the agent (reader.py).
Invariant: the packed answer never exceeds its token budget; when hits are left out, one
final line says how many.
"""

from __future__ import annotations

import os
from pathlib import Path

from capsule.ground.tokens import count
from capsule.retrieve import workspace
from capsule.retrieve.index import Hit, query_terms

SNIPPET_CHARS = 160
SCAN_BYTES = 512 << 10
LINES_PER_FILE = 2
CANDIDATES = 24          # occurrences per term looked at when choosing lines


def best_lines(text: str, terms: list[str], per_file: int = LINES_PER_FILE) -> list[tuple[int, str]]:
    """The lines matching the most distinct query terms (ties: earliest), as (line number, text)."""
    low_terms = [t for t in terms if len(t) > 1] or terms
    low = text.lower()
    starts: set[int] = set()
    for t in low_terms:       # candidate lines: the first CANDIDATES occurrences of each term (C-speed find)
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


def snippet(line: str) -> str:
    s = line.strip()
    return s if len(s) <= SNIPPET_CHARS else s[: SNIPPET_CHARS - 1] + "…"


def _cost(text: str) -> int:
    """A cheap upper estimate of tokens (code runs ~3.5-4 chars a token); the total is counted exactly."""
    return len(text) // 3 + 2


def pack(root: Path, hits: list[Hit], query: str, budget: int = 800) -> str:
    """`path:line:snippet` lines for the hits, best first, that fit in `budget` tokens."""
    terms = query_terms(query)
    groups: list[list[str]] = []
    used = 0
    left = 0
    for i, hit in enumerate(hits):
        try:
            real = workspace.resolve(root, hit.path)      # never follow a link out of the workspace
            with os.fdopen(workspace.open_inside(root, real, hit.path), "rb") as fh:
                text = fh.read(SCAN_BYTES).decode("utf-8", "replace")
        except (OSError, workspace.WorkspaceError):
            continue
        rows = [f"{hit.path}:{n}:{snippet(line)}" for n, line in best_lines(text, terms)]
        rows = rows or [f"{hit.path}:1:(path match)"]
        cost = _cost("\n".join(rows))
        if used + cost > budget - 12:   # keep room for the "more" line
            left = len(hits) - i
            break
        groups.append(rows)
        used += cost
    while groups and count("\n".join(r for g in groups for r in g)) > budget - 12:
        groups.pop()                     # the estimate was low: drop the weakest file
        left += 1
    if not groups:
        return f"no matches for {query!r}" if not hits else f"[{len(hits)} files matched; raise the budget to see them]"
    out = [r for g in groups for r in g]
    if left:
        out.append(f"[{left} more files matched; narrow the query or raise k]")
    return "\n".join(out)
