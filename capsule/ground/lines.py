"""Lines as editors and `grep -n` count them: the one splitting rule the read door, the read stubs
and the search shaping share.

Not responsible for line budgets or markers (observe/). Invariant: pure, imports nothing of capsule.
"""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """Split on "\n" only (a form feed or U+2028 inside a line stays in it), a trailing "\r"
    dropped, no empty last line for a final newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class RangeError(ValueError):
    """A line range that cannot be read: the message names it and the accepted forms."""


def parse_ranges(spec: str) -> tuple[tuple[int, int | None], ...]:
    """The one line-range parser of every door (`ctx expand --lines`, ctx_expand lines=, ctx_read
    mode=lines:): "N", "N-M", "N-" (to the end), comma-separated; 1-based, inclusive; None = the end."""
    out = []
    for part in spec.replace(" ", "").split(","):
        a, dash, b = part.partition("-")
        if not a.isdigit() or not (b.isdigit() or b == "") or (b == "" and not dash and not a):
            raise RangeError(f"bad line range {part!r} in {spec!r}: write N-M, N- or N, e.g. 10-20 or 5,10-20")
        first = int(a)
        last = None if dash and b == "" else int(b or a)
        if first < 1 or (last is not None and last < first):
            raise RangeError(f"bad line range {part!r}: lines start at 1 and N-M needs N <= M")
        out.append((first, last))
    return tuple(out)
