"""The streaming filter protocol: line in, flush, and an on-exit hook that sees the exit code.

For tools whose output the TOML DSL cannot shape (pytest sections, go test -json events,
git diff hunks). Not responsible for choosing a filter; a TOML filter names its streaming
class with `streaming = "module:Class"` and keeps its inline tests in the TOML file.
Invariant: on_exit always sees the exit code, so a nonzero exit is never summarised as
success; every line a filter does not emit is recorded as a Removal with a reason. A filter with
`ranged_markers` marks its own cut in the one marker contract (observe/markers.py): each omitted
run one ranged marker where it was dropped, every line a line it emitted states (`told`: a commit
header that carries its fields, a count line) no marker, the salience model's rare lines kept.
"""

from __future__ import annotations

from dataclasses import replace

from capsule.observe import keep, markers, rarity
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
    # True: run_stream writes one ranged marker per omitted run where the filter dropped it and
    # keeps the salience model's rare lines (the filter's output is a structure the pipeline's
    # re-marking cannot read back: rewritten headers, count lines); False: one `[N more lines]`
    # at cut_here(), re-marked by the pipeline (rarity.under)
    ranged_markers = False

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
        # where each drop happened: (len(self.out) then, first line, last line, told by an emitted line)
        self.gaps: list[tuple[int, int, int, bool]] = []

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

    def source_lines(self, lines: list[str]) -> set[int]:
        """0-based indices of the lines that are source the tool prints (a patch's lines): the
        salience model does not judge them (in code a line seen once is the rule, not news)."""
        return set()

    # --- helpers ----------------------------------------------------------------------
    def line(self, text: str) -> Line:
        """The current input line as a Line, pinned when observe/keep.py protects it."""
        return Line(self.lineno, text, pinned=self.lineno in self.pinned)

    def emit(self, text: str) -> None:
        self.out.append(text)

    def drop(self, text: str, reason: str, lineno: int | None = None, told: bool = False) -> None:
        """Leave the line out. `told`: a line the filter emits states it (a header carrying its
        fields, a count line), so no marker stands for it."""
        no = lineno if lineno is not None else self.lineno
        if no in self.pinned:
            self.emit(text)      # a protected line is never dropped, whatever the filter thinks
            return
        self._run.drop(Line(no, text), reason)
        self.gaps.append((len(self.out), no, no, told))

    def drop_block(self, first: int, last: int, text: str, reason: str) -> None:
        """Drop the original lines first..last (the caller made sure none is pinned) as one removal."""
        self._run.drop(Line(first, text), reason)
        if last > first:
            r = self._run.removals[-1]
            self._run.removals[-1] = type(r)(r.reason, r.count + last - first, r.start, last, r.preview)
        self.gaps.append((len(self.out), first, last, False))

    def keep_if(self, text: str, keep: bool, reason: str, told: bool = False) -> None:
        """Emit when `keep` or when the line is verbatim-class (and not quoted source); otherwise drop."""
        if keep or self.lineno in self.pinned or (is_verbatim(text) and self.lineno not in self.quoted):
            self.emit(text)
        else:
            self.drop(text, reason, told=told)

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
    pinned = set(keep.extra(text, exit_code))
    quoted = keep.quoted_source(text, exit_code)
    if flt.ranged_markers and body:
        # the salience model's rare lines stay; not in source the tool quotes (a diff's context,
        # a failing test's code), where a line seen once is the rule, not news
        split = body.split("\n")
        pinned |= rarity.salient(split) - set(quoted) - flt.source_lines(split)
    flt.pinned = frozenset(i + 1 for i in pinned)
    flt.quoted = frozenset(i + 1 for i in quoted)
    flt.known_verbatim = keep.verbatim_by_line(text, exit_code)
    flt.known_masked = keep.lines_of(text, exit_code)
    lines: list[str] = []
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
    removals = flt.removals
    if flt.ranged_markers and flt.gaps:
        out, shown = _marked(out, flt.gaps, lines)
        removals = _unremoved(removals, shown)
        placed = True
    elif flt._cut_at is not None and dropped:
        out.insert(flt._cut_at, marker(dropped))
        placed = True
    emitted = "\n".join(out)
    if emitted and trailing:
        emitted += "\n"
    return emitted, removals, placed


def _marked(out: list[str], gaps: list[tuple[int, int, int, bool]], lines) -> tuple[list[str], set[int]]:
    """`out` with one ranged marker (markers.marker) per omitted run, at the place it was dropped:
    drops at one place whose lines follow each other are one run; a run only of drops a line of
    `out` states (told) gets none; a run whose lines cost no more tokens than its marker is shown
    as printed. Returns the lines and the line numbers shown so."""
    runs: list[list] = []       # [position, first, last, told only]
    for pos, first, last, told in sorted(gaps, key=lambda g: (g[0], g[1])):
        if runs and runs[-1][0] == pos and runs[-1][2] + 1 == first:
            runs[-1][2] = last
            runs[-1][3] = runs[-1][3] and told
        else:
            runs.append([pos, first, last, told])
    marked: list[str] = []
    put_back: set[int] = set()
    at = 0
    for pos, first, last, told in runs:
        if told:
            continue
        marked += out[at:pos]
        at = pos
        said = markers.marker(last - first + 1, first, last)
        run = lines[first - 1:last]
        if markers.cheaper_shown(run, said):
            marked += [markers.shown_form(ln) for ln in run]
            put_back.update(range(first, last + 1))
        else:
            marked.append(said)
    return marked + out[at:], put_back


def _unremoved(removals: list, shown: set[int]) -> list:
    """The removals without the lines shown after all (a run cheaper than its marker)."""
    if not shown:
        return removals
    out = []
    for r in removals:
        if r.start is None or r.end is None or r.count != r.end - r.start + 1 or not any(
                no in shown for no in range(r.start, r.end + 1)):
            out.append(r)
            continue
        left = [no for no in range(r.start, r.end + 1) if no not in shown]
        while left:             # the lines still left out, one removal per run of them
            k = next((i for i in range(1, len(left)) if left[i] != left[i - 1] + 1), len(left))
            out.append(replace(r, count=k, start=left[0], end=left[k - 1]))
            left = left[k:]
    return out
