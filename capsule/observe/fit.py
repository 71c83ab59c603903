"""FIT: shape one output to fit under an agent client's own cap, errors first.

Not responsible for knowing the caps (capsule/agents/limits.py) or for ordinary compression (the
pipeline runs first; this only runs when its emission is still over the client's cap).
Invariant: every kept line is a line of the original (cut lines say so); the first occurrence of
each distinct error-class line is kept before any context; gaps show `…`, one `[N more lines]`
marker counts every removed line, and the footer names the archived original.
"""

from __future__ import annotations

from collections.abc import Callable

from capsule.observe import guard
from capsule.observe.verbatim import is_verbatim

GAP = "…"


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + " …[line cut]"


def fit(text: str, budget: int, size: Callable[[str], int], handle: str, *, context: int = 4, head: int = 30,
        tail: int = 20, line_chars: int = 2000) -> str:
    """`text` shaped to at most `budget` (in the client's unit); unchanged when it already fits."""
    if size(text) <= budget:
        return text
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n = len(lines)
    seen: set[str] = set()
    errors = []
    for i, line in enumerate(lines):
        key = line.strip()
        if key not in seen and is_verbatim(line):
            seen.add(key)
            errors.append(i)
    order = list(errors)
    for i in errors:
        order += [j for j in range(i - context, i + context + 1) if 0 <= j < n]
    order += list(range(min(head, n))) + list(range(max(n - tail, 0), n))
    tail_text = guard.marker(n) + "\n" + guard.footer(handle) + "\n"
    used = size(tail_text)
    chosen: set[int] = set()
    for i in order:
        if i in chosen:
            continue
        cost = size(_cut(lines[i], line_chars) + "\n") + size(GAP + "\n")  # a line may open a gap
        if used + cost > budget:
            continue
        chosen.add(i)
        used += cost
    out, prev = [], -1
    for i in sorted(chosen):
        if i != prev + 1:
            out.append(GAP)
        out.append(_cut(lines[i], line_chars))
        prev = i
    if prev != n - 1:
        out.append(GAP)
    removed = n - len(chosen)
    return "\n".join(out) + "\n" + guard.marker(removed) + "\n" + guard.footer(handle) + "\n"
