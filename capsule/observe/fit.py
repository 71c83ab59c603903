"""FIT: shape one output to fit under an agent client's own cap, errors and salient lines first.

Not responsible for knowing the caps (capsule/agents/limits.py) or for ordinary compression (the
pipeline runs first; this only runs when its emission is still over the client's cap), nor for what
makes a line salient (observe/rarity.py) or the markers' form (observe/markers.py).
Invariant: every kept line is a line of the original (cut lines say so); the first occurrence of
each distinct error-class line, then every salient line (the one-off line among repeats), is kept
before any context; each omitted run is one marker of the one contract (kept + markers == total),
and the footer names the archived original; the result is never over `budget` unless the footer
alone is.
"""

from __future__ import annotations

from collections.abc import Callable

from capsule.observe import guard, markers, rarity
from capsule.observe.verbatim import is_verbatim


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + " …[line cut]"


def order_of(lines: list[str], context: int, head: int, tail: int) -> list[int]:
    """Original indices (0-based) by priority: distinct errors, salient lines, their context, the
    head, the tail. An index may repeat; the first place counts."""
    n = len(lines)
    seen: set[str] = set()
    errors = []
    for i, line in enumerate(lines):
        key = line.strip()
        if key not in seen and is_verbatim(line):
            seen.add(key)
            errors.append(i)
    rare = sorted(rarity.salient(lines) - set(errors))
    order = errors + rare
    for i in errors:
        order += [j for j in range(i - context, i + context + 1) if 0 <= j < n]
    for i in rare:
        order += [j for j in range(i - rarity.NEIGHBOURS, i + rarity.NEIGHBOURS + 1) if 0 <= j < n]
    return order + list(range(min(head, n))) + list(range(max(n - tail, 0), n))


def fit(text: str, budget: int, size: Callable[[str], int], handle: str, *, context: int = 4, head: int = 30,
        tail: int = 20, line_chars: int = 2000) -> str:
    """`text` shaped to at most `budget` (in the client's unit); unchanged when it already fits."""
    if size(text) <= budget:
        return text
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n = len(lines)
    foot = guard.footer(handle) + "\n"
    run_cost = size(markers.marker(n, n, n) + "\n")      # what the run a kept line may open costs at most
    used = size(foot) + run_cost
    chosen: list[int] = []
    taken: set[int] = set()
    for i in order_of(lines, context, head, tail):
        if i in taken:
            continue
        cost = size(_cut(lines[i], line_chars) + "\n") + run_cost
        if used + cost > budget:
            continue
        taken.add(i)
        chosen.append(i)
        used += cost
    while True:
        body = markers.render(lines, {i: _cut(lines[i], line_chars) for i in taken})
        out = "\n".join(body) + "\n" + foot
        if size(out) <= budget or not chosen:
            return out
        taken.discard(chosen.pop())      # the last chosen goes first (a shown short run cost more)
