"""GUARD: the contracts every emission keeps, whatever the transform did.

Not responsible for shrinking anything, nor for the omission markers' form and contract
(markers.py owns them; guard re-exports MARKER_RE and marker). Decides raw-or-transformed, and
owns the recovery footer.
Invariants: never worse in tokens (INV-3), and a change that saves less than the worth-it
threshold (budgets.toml [worth]) is not made; small outputs pass untouched; a lossy emission
carries one footer, and its markers add up (kept + markers' N == total).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from capsule.ground import tomlcache
from capsule.observe import markers

SMALL_LINES = 5
SMALL_TOKENS = 64

MARKER_RE = markers.MARKER_RE      # the one marker form (observe/markers.py), ranged or bare
# The wire marker `<<ccr:HASH>>` stays byte-compatible; the single quotes around it make the
# footer's command run as printed in sh/bash (bare `<<` would start a here-document).
FOOTER_PREFIX = "[full output: capsule ctx expand '<<ccr:"
FOOTER_SUFFIX = ">>']"
FOOTER_RE = re.compile(r"\[full output: capsule ctx expand '<<ccr:([0-9a-f]{24})>>'\]")


@lru_cache(maxsize=1)
def budgets() -> dict:
    """observe/data/budgets.toml: line budgets, the head/tail split, the worth-it threshold."""
    # by path, not importlib.resources: that (and the zipfile module it loads) is ~6 ms of a cold `ctx run`
    data = (Path(__file__).parent / "data" / "budgets.toml").read_bytes()
    return tomlcache.loads(data)


def worth_it(raw_tokens: int, emitted_tokens: int) -> bool:
    """A changed emission (marker and footer counted) must save enough to pay for being lossy."""
    worth = budgets()["worth"]
    saved = raw_tokens - emitted_tokens
    return saved >= worth["min_saved_tokens"] and saved >= worth["min_saved_share"] * raw_tokens


def worth_counting(raw_chars: int, emitted_chars: int) -> bool:
    """Does a changed emission (marker and footer included) save enough characters to be
    considered at all (budgets.toml [worth] min_saved_chars_share)?"""
    return raw_chars - emitted_chars >= budgets()["worth"]["min_saved_chars_share"] * raw_chars


def marker(n: int, start: int | None = None, end: int | None = None) -> str:
    return markers.marker(n, start, end)


def footer(handle: str) -> str:
    return f"{FOOTER_PREFIX}{handle}{FOOTER_SUFFIX}"


# Transforms that re-shape a document rather than drop its lines: a one-line API response or
# a minified page is exactly what they are for, so only the token floor applies to them.
RESHAPING_TRANSFORMS = frozenset({"json", "html", "yaml", "toml", "tabular"})


def is_small(text: str, tokens: int, transform_id: str | None = None) -> bool:
    """Seed 001's fail-open floor: <= 5 lines or <= 64 tokens pass untouched (line-dropping
    transforms); a re-shaping transform is held to the token floor alone."""
    if tokens <= SMALL_TOKENS:
        return True
    return transform_id not in RESHAPING_TRANSFORMS and line_count(text) <= SMALL_LINES


def line_count(text: str) -> int:
    """Lines as a terminal shows them over time: a bare \r (progress redraw) starts a new frame."""
    if not text:
        return 0
    frames = text.count("\r") - text.count("\r\n")
    return text.count("\n") + frames + (0 if text.endswith("\n") else 1)


def count_markers(text: str) -> int:
    if " more line" not in text:      # every marker holds it: most texts need no line-by-line look
        return 0
    return sum(1 for line in text.split("\n") if MARKER_RE.match(line.strip()))


def with_marker(text: str, removed: int, original_markers: int) -> str:
    """Append the single marker unless the transform already placed it."""
    if removed <= 0 or count_markers(text) > original_markers:
        return text
    sep = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{sep}{marker(removed)}\n"


def with_footer(text: str, handle: str) -> str:
    sep = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{sep}{footer(handle)}\n"


def marker_ok(emitted: str, removed: int, original_markers: int) -> bool:
    added = count_markers(emitted) - original_markers
    return added == (1 if removed > 0 else 0)
