"""The streaming filter protocol: line in, flush, and an on-exit hook that sees the exit code.

For tools whose output the TOML DSL cannot shape (pytest sections, go test -json events,
git diff hunks). Not responsible for choosing a filter; a TOML filter names its streaming
class with `streaming = "module:Class"` and keeps its inline tests in the TOML file.
Invariant: on_exit always sees the exit code, so a nonzero exit is never summarised as
success; every line a filter does not emit is recorded as a Removal with a reason.
"""

from __future__ import annotations

from capsule.observe import keep
from capsule.observe.filters.stages import ANSI, Line, Run
from capsule.observe.guard import marker
from capsule.observe.verbatim import is_verbatim


class StreamFilter:
    """Base class. Subclasses override feed_line / flush / on_exit and call emit / drop."""

    command: str | None = None     # the command line, when known (set by the engine)
    options: dict = {}             # the filter's `options` table from its TOML file (set by the engine)
    intent: str | None = None      # what the agent is after, when known (set by the engine)
    cues = None                    # () -> observe.cues.Cues: the session's cues (set by the engine), read lazily
    spec = None                    # the FilterSpec naming this class: its budgets and options

    def __init__(self) -> None:
        self.out: list[str] = []
        self._run = Run()
        self.lineno = 0
        self._cut_at: int | None = None
        self._cut_reason = ""
        self.pinned: frozenset[int] = frozenset()   # line numbers observe/keep.py adds to the verbatim class
        self.quoted: frozenset[int] = frozenset()   # line numbers the tool quotes (source): their words are not errors
        self.known_verbatim: dict[str, bool] = {}    # is_verbatim of the input's lines, already worked out
        # (the input's lines, digits.masked of them) as observe/keep.py split and masked them
        self.known_masked: tuple[tuple[str, ...], tuple[str, ...] | None] | None = None

    # --- protocol ---------------------------------------------------------------------
    def feed_line(self, line: str) -> None:
        self.emit(line)

    def feed_lines(self, lines: list[str]) -> None:
        """All the input's lines at once (ANSI codes already stripped): feed_line on each in turn.
        A filter that only buffers may override it to skip the per-line calls."""
        for text in lines:
            self.lineno += 1
            self.feed_line(text)

    def flush(self) -> None:
        """End of input: emit anything held back."""

    def on_exit(self, exit_code: int | None) -> None:
        """Sees the command's exit code (None when unknown) after flush."""

    # --- helpers ----------------------------------------------------------------------
    def line(self, text: str) -> Line:
        """The current input line as a Line, pinned when observe/keep.py protects it."""
        return Line(self.lineno, text, pinned=self.lineno in self.pinned)

    def emit(self, text: str) -> None:
        self.out.append(text)

    def drop(self, text: str, reason: str, lineno: int | None = None) -> None:
        no = lineno if lineno is not None else self.lineno
        if no in self.pinned:
            self.emit(text)      # a protected line is never dropped, whatever the filter thinks
            return
        self._run.drop(Line(no, text), reason)

    def drop_block(self, first: int, last: int, text: str, reason: str) -> None:
        """Drop the original lines first..last (the caller made sure none is pinned) as one removal."""
        self._run.drop(Line(first, text), reason)
        if last > first:
            r = self._run.removals[-1]
            self._run.removals[-1] = type(r)(r.reason, r.count + last - first, r.start, last, r.preview)

    def keep_if(self, text: str, keep: bool, reason: str) -> None:
        """Emit when `keep` or when the line is verbatim-class (and not quoted source); otherwise drop."""
        if keep or self.lineno in self.pinned or (is_verbatim(text) and self.lineno not in self.quoted):
            self.emit(text)
        else:
            self.drop(text, reason)

    def cut_here(self) -> None:
        """Mark the place a truncation happened: the single marker goes here."""
        if self._cut_at is None:
            self._cut_at = len(self.out)

    @property
    def removals(self):
        return self._run.removals


def run_stream(flt: StreamFilter, text: str, exit_code: int | None) -> tuple[str, list, bool]:
    """Drive a StreamFilter over a whole text; returns (text, removals, placed_marker)."""
    trailing = text.endswith("\n")
    body = text[:-1] if trailing else text
    flt.pinned = frozenset(i + 1 for i in keep.extra(text, exit_code))
    flt.quoted = frozenset(i + 1 for i in keep.quoted_source(text, exit_code))
    flt.known_verbatim = keep.verbatim_by_line(text, exit_code)
    flt.known_masked = keep.lines_of(text, exit_code)
    if body:
        lines = list(flt.known_masked[0])      # body.split("\n"): the lines the analysis split
        if "\x1b" in body:
            lines = [ANSI.sub("", raw) if "\x1b" in raw else raw for raw in lines]
        flt.feed_lines(lines)
    flt.flush()
    flt.on_exit(exit_code)
    out = list(flt.out)
    placed = False
    dropped = sum(r.count for r in flt.removals)
    if flt._cut_at is not None and dropped:
        out.insert(flt._cut_at, marker(dropped))
        placed = True
    emitted = "\n".join(out)
    if emitted and trailing:
        emitted += "\n"
    return emitted, flt.removals, placed
