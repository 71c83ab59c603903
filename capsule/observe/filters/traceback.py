"""Streaming filter for programs run directly (python/node scripts, logs): tracebacks trimmed,
repeated lines and recursion blocks collapsed, runs of same-shaped log lines summarised.

Not responsible for test runners or compilers (their own filters).
Invariant: exception lines, project frames and verbatim-class lines are kept; a collapsed
run keeps its first and last line; every run of lines dropped is one marker of the one contract
(observe/markers.py) saying how many lines it stands for and where they were.
"""

from __future__ import annotations

import re
from collections import Counter
from operator import or_

from capsule.observe import digits
from capsule.observe.filters.stages import (CR_REDRAW, Line, collapse_blocks, collapse_periodic, collapse_repeats,
                                            omitted)
from capsule.observe.filters.streaming import StreamFilter
from capsule.observe.verbatim import is_verbatim

_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
_LIB_PATH = re.compile(r"(site-packages|dist-packages|/usr/lib/python|/lib/python\d|<frozen |node_modules|node:internal|/usr/lib/go|/rustc/)")
_CARET = re.compile(r"^\s*[\^~]+[\^~ ]*$")
_JS_FRAME = re.compile(r"^\s+at .*")
_NUM = re.compile(r"\d+")
SIMILAR_RUN = 6       # runs of same-shaped lines longer than this are summarised


def shape(text: str) -> str:
    """A line's template: digits normalised, first five words."""
    return _first_words(_NUM.sub("#", text))


def _first_words(text: str) -> str:
    return " ".join(text.split(None, 5)[:5])     # str.split's whitespace is re's \s: \S+ words


def _numbered(texts: list[str], masked: tuple[str, ...] | list[str] | None) -> list[str]:
    """[_NUM.sub("#", t) for t in texts], one substitution over the distinct digit-masked texts
    joined (`masked`: digits.masked(texts); a digit run stays a digit run, so a text and its mask
    number alike; a log's lines mostly differ in their numbers)."""
    if masked is None:        # a text holds a newline
        return [_NUM.sub("#", t) for t in texts]
    distinct = list(dict.fromkeys(masked))
    number_of = dict(zip(distinct, _NUM.sub("#", "\n".join(distinct)).split("\n")))
    return list(map(number_of.__getitem__, masked))


class LineFacts:
    """What the passes ask of a line text again and again (its digits normalised, its shape,
    whether it is verbatim-class), worked out once and carried on each Line (numbered, shape,
    verbatim), so each pass reads them off its lines: the digits by one substitution over the
    distinct texts, the shape once per normalised text, the verbatim class (and, for the input's
    own lines, their digit masks) taken from the analysis observe/keep.py already made. A line a
    pass makes (a count line, a collapsed repeat) gets its facts when first asked."""

    def __init__(self, lines: list[Line], known_verbatim: dict[str, bool] | None = None,
                 known_masked: tuple[tuple[str, ...], tuple[str, ...] | None] | None = None) -> None:
        texts = [line.text for line in lines]
        # keep's masks fit when these are the lines it analysed (no ANSI code or redraw changed one)
        fits = known_masked is not None and known_masked[0] == tuple(texts)
        masked = known_masked[1] if fits else digits.masked(texts)
        nums = _numbered(texts, masked)
        shape_of = {n: _first_words(n) for n in dict.fromkeys(nums)}
        self._verbatim = dict(known_verbatim or {})
        for line, n, v in zip(lines, nums, map(self._verbatim.get, texts)):
            line.numbered, line.shape, line.verbatim = n, shape_of[n], v     # v: None until asked
        # the pre-checks' view of these lines (digits.distinct_lines): for digit-free trigger words
        self.probe = digits.distinct_lines(masked) if masked is not None else "\n" + "\n".join(texts)

    def numbered(self, text: str) -> str:
        return _NUM.sub("#", text)

    def _learn(self, line: Line) -> Line:
        """A line made after the facts were: its own."""
        if line.numbered is None:
            line.numbered = self.numbered(line.text)
            line.shape = _first_words(line.numbered)
        return line

    def numbered_all(self, lines: list[Line]) -> list[str]:
        """[self.numbered(line.text) for line in lines]."""
        nums = [line.numbered for line in lines]
        if None in nums:
            nums = [self._learn(line).numbered for line in lines]
        return nums

    def shapes(self, lines: list[Line]) -> list[str]:
        """[shape(line.text) for line in lines]."""
        out = [line.shape for line in lines]
        if None in out:
            out = [self._learn(line).shape for line in lines]
        return out

    def _verbatim_of(self, line: Line) -> bool:
        if line.verbatim is None:
            v = self._verbatim.get(line.text)
            line.verbatim = self._verbatim[line.text] = is_verbatim(line.text) if v is None else v
        return line.verbatim

    def kept(self, line: Line) -> bool:
        return line.pinned or self._verbatim_of(line)

    def kept_all(self, lines: list[Line]) -> list[bool]:
        """[self.kept(line) for line in lines]: pinned, or verbatim-class (asked once per text)."""
        flags = [line.verbatim for line in lines]
        if None in flags:
            flags = [self._verbatim_of(line) for line in lines]
        return list(map(or_, [line.pinned for line in lines], flags))


def collapse_similar(lines: list[Line], run, keep_edges: int = 2, facts: LineFacts | None = None) -> list[Line]:
    """Runs of > SIMILAR_RUN consecutive lines with the same shape keep their edges only."""
    facts = facts or LineFacts(lines)
    shapes = facts.shapes(lines)
    kept = facts.kept_all(lines)
    out: list[Line] = []
    i = 0
    n = len(lines)
    while i < n:
        key = shapes[i]
        j = i + 1
        while j < n and key and shapes[j] == key and not kept[j]:
            j += 1
        if j - i > SIMILAR_RUN and not kept[i]:
            out.extend(lines[i:i + keep_edges])
            middle = lines[i + keep_edges:j - keep_edges]
            run.drop_many(middle, "similar log line")
            out.append(omitted(middle, f"'{key}'"))
            out.extend(lines[j - keep_edges:j])
        else:
            out.extend(lines[i:j])
        i = j
    return out


SHAPE_MIN = 8        # a shape seen this often (not verbatim) keeps its first 2 and last occurrence


def collapse_shapes(lines: list[Line], run, facts: LineFacts | None = None) -> list[Line]:
    """Interleaved log lines: a frequent non-error shape keeps its first two and its last line;
    each contiguous run of the lines dropped is one marker in its place (markers.py), naming the
    shape when the run's lines share one."""
    facts = facts or LineFacts(lines)
    keys = [shape if line.no and not kept else "" for line, shape, kept in zip(lines, facts.shapes(lines), facts.kept_all(lines))]
    counts = Counter(keys)
    counts.pop("", None)      # a kept line's or a made line's: no shape to count
    seen: dict[str, int] = {}
    out: list[Line] = []
    dropped: list[Line] = []
    gone: list[Line] = []           # the run of dropped lines since the last line kept
    gone_keys: set[str] = set()
    for line, key in zip(lines, keys):
        total = counts.get(key, 0)
        if total >= SHAPE_MIN:
            seen[key] = seen.get(key, 0) + 1
            if 2 < seen[key] < total:
                dropped.append(line)
                gone.append(line)
                gone_keys.add(key)
                continue
        if gone:
            out.append(_shape_marker(gone, gone_keys))
            gone, gone_keys = [], set()
        out.append(line)
    if gone:
        out.append(_shape_marker(gone, gone_keys))
    run.drop_many(dropped, "frequent log line")
    return out


def _shape_marker(gone: list[Line], keys: set[str]) -> Line:
    return omitted(gone, f"'{next(iter(keys))}'" if len(keys) == 1 and len(gone) > 1 else None)


def collapse_shape_blocks(lines: list[Line], max_period: int, run, facts: LineFacts | None = None) -> list[Line]:
    """A block of 2..max_period lines repeated with only numbers changing keeps its first and last copy."""
    facts = facts or LineFacts(lines)
    return collapse_periodic(lines, max_period, run, keys=facts.numbered_all(lines), min_reps=4, keep_last=True)


class PythonRunFilter(StreamFilter):
    """Buffered: needs the whole output to see blocks; emits at flush."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[Line] = []

    def feed_line(self, line: str) -> None:
        if "\r" in line.rstrip("\r"):
            line = CR_REDRAW.sub("", line)   # progress redraws: what was drawn last
        self.lines.append(self.line(line))

    def feed_lines(self, lines: list[str]) -> None:
        """feed_line on each line, without a call per line (4,000 calls were ~2 ms of a warm observe)."""
        if type(self).feed_line is not PythonRunFilter.feed_line:
            super().feed_lines(lines)     # a subclass's own per-line step
            return
        first = self.lineno + 1
        if any("\r" in text for text in lines):
            lines = [CR_REDRAW.sub("", t) if "\r" in t and "\r" in t.rstrip("\r") else t for t in lines]
        fed = [Line(no, text) for no, text in enumerate(lines, first)]
        for no in self.pinned:
            if 0 <= no - first < len(fed):
                fed[no - first].pinned = True
        self.lines.extend(fed)
        self.lineno += len(lines)

    def flush(self) -> None:
        facts = LineFacts(self.lines, self.known_verbatim, self.known_masked)
        lines = self._trim_frames(self.lines, facts)
        lines = collapse_repeats(lines, self._run)
        lines = collapse_blocks(lines, 8, self._run)
        lines = collapse_shape_blocks(lines, 6, self._run, facts)
        lines = collapse_similar(lines, self._run, facts=facts)
        lines = collapse_shapes(lines, self._run, facts)
        for line in lines:
            self.emit(line.text)

    def _trim_frames(self, lines: list[Line], facts: LineFacts) -> list[Line]:
        """Library frames keep their File line only; caret lines go everywhere. (`facts`: of these lines.)"""
        texts = facts.probe
        if not ('File "' in texts or "^" in texts or "~" in texts or "at " in texts):
            return list(lines)      # no line can be a frame or a caret line (a long log: no loop)
        out: list[Line] = []
        in_lib = False
        for line in lines:
            text = line.text
            m = _PY_FRAME.match(text)
            if m:
                in_lib = bool(_LIB_PATH.search(m.group(1)))
                out.append(line)
                continue
            if _CARET.match(text) and text.strip() and not line.pinned:
                self._run.drop(line, "traceback caret line")
                continue
            if in_lib and text.startswith("    ") and not facts.kept(line):
                self._run.drop(line, "library frame source line")
                continue
            in_lib = False
            if _JS_FRAME.match(text) and _LIB_PATH.search(text) and not facts.kept(line):
                self._run.drop(line, "library stack frame")
                continue
            out.append(line)
        return out
