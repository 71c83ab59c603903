"""Many lines at once with every ASCII digit read as `0`: the form on which a rule that sees a
digit only as a digit (`\\d`, `\\w`, a needle with no digit in it) answers as on the line itself.
A long log's lines mostly differ in their numbers, so a rule asked once per distinct masked
line (a few hundred of 4,000) answers for all of them.

Not responsible for any rule: verbatim.py, keep.py, anomalies.py and the log filter ask it.
Invariant: one masked text per line, each as long as its line, differing only where the line
holds an ASCII digit (there `0`); None when the lines cannot be joined and split back.
"""

from __future__ import annotations

_ZERO = bytes.maketrans(b"123456789", b"000000000")


def masked(lines: list[str]) -> list[str] | None:
    """The lines with 1-9 read as 0, by one translation of their joined UTF-8 bytes (no ASCII
    digit byte occurs inside a multi-byte character; surrogatepass carries any lone surrogate
    through). None when a line holds a newline."""
    if not lines:
        return []
    joined = "\n".join(lines)
    out = joined.encode("utf-8", "surrogatepass").translate(_ZERO).decode("utf-8", "surrogatepass").split("\n")
    return out if len(out) == len(lines) else None


def distinct_lines(masked: list[str]) -> str:
    """Each distinct masked line once, each after a newline: a needle holding no ASCII digit (and
    no newline, or one only at its start: at a line's start) occurs in some line exactly when it
    occurs here, so a rule's whole-text pre-check reads this (a long log's few hundred distinct
    masks) instead of the text."""
    return "\n" + "\n".join(dict.fromkeys(masked))
