"""Text for a terminal: control characters taken from stored data made visible before printing.

Not responsible for layout (each report renders its own). A ledger command, a transcript's cwd or a
model name is data someone else wrote: an ESC in it could retitle the window, hide text (ESC[8m) or
move the cursor over earlier lines. Invariant: the result holds no C0/C1 control character but the
kept ones (newline by default) and no bidirectional override; printable text passes unchanged.
"""

from __future__ import annotations

import re
import os

# C0 (but the kept ones), DEL, C1, and the bidi embeddings/overrides/isolates ("Trojan Source").
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMES = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\x1b": "\\e"}


def _show(m: re.Match) -> str:
    c = m.group()
    return _NAMES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def visible(text: str, keep: str = "\n") -> str:
    """`text` with each control character as an escape (ESC -> \\e, BEL -> \\x07, U+202E -> \\u202e)."""
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else _show(m), text)


def colour_on(stream) -> bool:
    """Colour only for a terminal, and never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


_CODES = {"bold": "1", "dim": "2", "green": "32", "yellow": "33", "red": "31"}


def paint(text: str, style: str, on: bool) -> str:
    """`text` in an SGR style when `on` (colour_on's answer), else unchanged."""
    return f"\x1b[{_CODES[style]}m{text}\x1b[0m" if on else text
