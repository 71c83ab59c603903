"""Read modes: turn a file's text into what ctx_read returns for one mode string.

Not responsible for paths, scopes or stubs (reader.py), nor for parsing code (the outline transform).
Invariant: `full` is verbatim; every other mode either returns what it names or raises ModeError
with a message naming the allowed modes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from blake3 import blake3

from capsule.ground.lines import RangeError, split_lines
from capsule.ground.lines import parse_ranges as parse_line_ranges

SOURCE_SUFFIXES = {".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".rs", ".go", ".java", ".c",
                   ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".rb", ".sh", ".bash"}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}
SIZE_GATE_LINES = 200         # source files longer than this default to signatures
SIZE_GATE_BYTES = 8_000
ANCHOR_HEX = 4
MODES_HELP = "full, signatures, outline, lines:N-M (or lines:5,10-20), section:<heading>, anchored"


class ModeError(ValueError):
    """An unknown or malformed mode."""


@dataclass(frozen=True)
class Mode:
    name: str                                   # full | signatures | lines | section | anchored
    ranges: tuple[tuple[int, int | None], ...] = ()    # for lines (None: to the end)
    heading: str = ""                           # for section

    def key(self) -> str:
        if self.name == "lines":
            return "lines:" + ",".join(f"{a}-{'' if b is None else b}" for a, b in self.ranges)
        if self.name == "section":
            return f"section:{self.heading}"
        return self.name


def parse(mode: str | None) -> Mode | None:
    """Parse a mode string; None/"" / "auto" means "let the reader choose"."""
    text = (mode or "").strip()
    if text in ("", "auto"):
        return None
    low = text.lower()
    if low in ("full", "anchored"):
        return Mode(low)
    if low in ("signatures", "outline"):
        return Mode("signatures")
    if low.startswith("lines:"):
        return Mode("lines", ranges=parse_ranges(text[6:]))
    if low.startswith("section:"):
        heading = text[8:].strip()
        if not heading:
            raise ModeError("section: needs a heading, e.g. section:Install")
        return Mode("section", heading=heading)
    raise ModeError(f"unknown mode {text!r}; use one of: {MODES_HELP}")


def parse_ranges(spec: str) -> tuple[tuple[int, int | None], ...]:
    """ground/lines.py's one range parser, its error as a ModeError."""
    try:
        return parse_line_ranges(spec)
    except RangeError as exc:
        raise ModeError(f"{exc} (in lines:{spec})") from None


def default_mode(path: str, text: str) -> Mode:
    """Source files above the size gate default to signatures; everything else to full."""
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path else ""
    big = text.count("\n") > SIZE_GATE_LINES or len(text) > SIZE_GATE_BYTES
    return Mode("signatures") if suffix in SOURCE_SUFFIXES and big else Mode("full")


def lines(text: str, ranges: tuple[tuple[int, int | None], ...]) -> str:
    all_lines = split_lines(text)
    total = len(all_lines)
    out: list[str] = []
    for a, b in ranges:
        if a > total:
            raise ModeError(f"line {a} is past the end; the file has {total} lines")
        out.extend(f"{n}| {all_lines[n - 1]}" for n in range(a, min(total if b is None else b, total) + 1))
    return "\n".join(out)


def anchor(line: str) -> str:
    return blake3(line.encode("utf-8", "surrogateescape")).hexdigest()[:ANCHOR_HEX]


def anchored(text: str) -> str:
    """Every line as `N#hash| text`: the hash lets an edit check the line did not drift."""
    return "\n".join(f"{n}#{anchor(line)}| {line}" for n, line in enumerate(split_lines(text), 1))


_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of each ATX heading outside code fences."""
    out = []
    fence = None
    for i, line in enumerate(split_lines(text)):
        m = _FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence:
            continue
        h = _ATX.match(line)
        if h:
            out.append((i, len(h.group(1)), h.group(2).strip()))
    return out


def section(text: str, heading: str) -> str:
    """The markdown section under `heading` (case-insensitive; exact title first, then prefix)."""
    found = headings(text)
    want = heading.lstrip("#").strip().lower()
    pick = next((h for h in found if h[2].lower() == want), None) or \
        next((h for h in found if h[2].lower().startswith(want)), None) or \
        next((h for h in found if want in h[2].lower()), None)
    if pick is None:
        names = ", ".join(h[2] for h in found[:20]) or "none"
        raise ModeError(f"no section {heading!r}; headings: {names}")
    start, level, _ = pick
    lines_ = split_lines(text)
    end = len(lines_)
    for i, lvl, _title in found:
        if i > start and lvl <= level:
            end = i
            break
    return "\n".join(lines_[start:end]).rstrip("\n")
