"""The TOON syntax both directions share: delimiters, clause texts, token patterns, the error type.

Not responsible for encoding (toon.py) or decoding (toon_decode.py). Invariant: one spelling of
each piece of the format, so encode and decode cannot drift apart.
"""

from __future__ import annotations

import re

DELIMITERS = (",", "\t", " ")       # tabular cell delimiters encode accepts
SPARSE = "an empty cell means the row lacks that key"   # (comma and tab rows only)
ALSO = " every row also has "       # after a tabular header: the columns stated once
PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
HEADER = re.compile(r"\[(\d+)\]")


class ToonError(ValueError):
    """Raised by decode on text that is not TOON as encode writes it."""


def value_at(obj: dict, path: tuple[str, ...]):
    for part in path:
        obj = obj[part]
    return obj
