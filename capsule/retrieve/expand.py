"""Expand: an archived original back, whole or as a selection — the one selection rule both doors use
(`capsule ctx expand HANDLE [--lines A-B] [--grep RE]` and the MCP tool ctx_expand).

Responsible for the selection: line ranges (ground/lines.py's one parser), a pattern matched by
google-re2 (linear time, so an untrusted pattern cannot hang the engine; smart case: a pattern
without an upper-case letter matches either case, as ripgrep --smart-case), the numbered form of a
match (`N:line`, as grep -n), and counting what the caller must say (lines, matches, redactions).
Not responsible for storing (store/archive.py) or for how a door shows errors.
Invariant: with no selector the bytes are exactly the archived bytes; a range selection is the
original's lines byte for byte; the original is streamed chunk by chunk, never joined whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import re2

from capsule.ground.lines import parse_ranges

REDACTED = b"[capsule redacted: "     # store/redact.py's marker


class ExpandError(ValueError):
    """A selection that cannot be made: a bad range or pattern, or a range past the end."""


class Selection:
    """The selected bytes of one original, streamed; `total`, `matched`, `redacted` are known once
    the stream is consumed."""

    def __init__(self, chunks: Iterable[bytes], lines: str | None = None, grep: str | None = None):
        self.ranges = _ranges(lines) if lines else None
        self.pattern = compile_pattern(grep) if grep else None
        self.lines_spec, self.grep = lines, grep
        self.total = self.matched = self.redacted = 0
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        if self.ranges is None and self.pattern is None:
            for chunk in self._chunks:
                self.redacted += chunk.count(REDACTED)
                yield chunk
            return
        last_wanted = None if self.ranges is None or any(b is None for _, b in self.ranges) else \
            max(b for _, b in self.ranges)
        for number, line in numbered(self._chunks):
            self.total = number
            self.redacted += line.count(REDACTED)
            if last_wanted is not None and number > last_wanted:
                continue        # keep counting: a range past the end must be told from a short one
            if self.ranges is not None and not any(a <= number and (b is None or number <= b) for a, b in self.ranges):
                continue
            if self.pattern is None:
                yield line + b"\n"
            elif self.pattern.search(line):
                self.matched += 1
                yield b"%d:" % number + line + b"\n"

    def problem(self) -> str | None:
        """After the stream: why an empty selection is empty (None when something was selected or
        nothing was asked). A range starting past the end is an error; a pattern matching nothing is not."""
        if self.ranges is not None and min(a for a, _ in self.ranges) > self.total:
            s = "s" if self.total != 1 else ""
            return f"--lines {self.lines_spec}: the original has only {self.total} line{s}"
        if self.pattern is not None and not self.matched:
            return f"no line matches --grep {self.grep!r} in the selected lines"
        return None


def compile_pattern(grep: str):
    """A --grep pattern as google-re2 compiles it (smart case); ExpandError when it is not valid."""
    text = grep if any(c.isupper() for c in grep) else "(?i)" + grep
    try:
        return re2.compile(text.encode("utf-8", "surrogateescape"))
    except re2.error as exc:
        raise ExpandError(f"--grep {grep!r}: bad regular expression: {exc}") from None


def check(lines: str | None = None, grep: str | None = None) -> None:
    """Raise ExpandError for a bad range or pattern before anything is written."""
    Selection((), lines, grep)


def _ranges(lines: str):
    try:
        return parse_ranges(lines)
    except ValueError as exc:
        raise ExpandError(f"--lines {lines}: {exc}") from None


def numbered(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """Numbered lines from a stream of chunks, without joining the whole original."""
    number, carry = 0, b""
    for chunk in chunks:
        parts = (carry + chunk).split(b"\n")
        carry = parts.pop()
        for line in parts:
            number += 1
            yield number, line
    if carry:
        yield number + 1, carry
