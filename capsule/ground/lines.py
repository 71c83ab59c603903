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
