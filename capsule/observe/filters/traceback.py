"""Streaming filter for programs run directly (python/node scripts, logs): tracebacks trimmed,
repeated lines and recursion blocks collapsed, runs of same-shaped log lines summarised.

Not responsible for test runners or compilers (their own filters).
Invariant: exception lines, project frames and verbatim-class lines are kept; a collapsed
run keeps its first and last line and says how many lines it stands for.
"""

from __future__ import annotations

import re

from capsule.observe.filters.stages import _CR_REDRAW, Line, _collapse_blocks, _collapse_repeats, collapse_periodic
from capsule.observe.filters.streaming import StreamFilter
from capsule.observe.verbatim import is_verbatim

_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
_LIB_PATH = re.compile(r"(site-packages|dist-packages|/usr/lib/python|/lib/python\d|<frozen |node_modules|node:internal|/usr/lib/go|/rustc/)")
_CARET = re.compile(r"^\s*[\^~]+[\^~ ]*$")
_JS_FRAME = re.compile(r"^\s+at .*")
_NUM = re.compile(r"\d+")
_WORD = re.compile(r"\S+")
SIMILAR_RUN = 6       # runs of same-shaped lines longer than this are summarised


def shape(text: str) -> str:
    """A line's template: digits normalised, first five words."""
    words = _WORD.findall(_NUM.sub("#", text))
    return " ".join(words[:5])


def _kept(line: Line) -> bool:
    return line.pinned or is_verbatim(line.text)


def collapse_similar(lines: list[Line], run, keep_edges: int = 2) -> list[Line]:
    """Runs of > SIMILAR_RUN consecutive lines with the same shape keep their edges only."""
    out: list[Line] = []
    i = 0
    n = len(lines)
    while i < n:
        key = shape(lines[i].text)
        j = i + 1
        while j < n and key and shape(lines[j].text) == key and not _kept(lines[j]):
            j += 1
        if j - i > SIMILAR_RUN and not _kept(lines[i]):
            out.extend(lines[i:i + keep_edges])
            middle = lines[i + keep_edges:j - keep_edges]
            for line in middle:
                run.drop(line, "similar log line")
            out.append(Line(0, f"[{len(middle)} similar lines: {key}]"))
            out.extend(lines[j - keep_edges:j])
        else:
            out.extend(lines[i:j])
        i = j
    return out


SHAPE_MIN = 8        # a shape seen this often (not verbatim) keeps its first 2 and last occurrence


def collapse_shapes(lines: list[Line], run) -> list[Line]:
    """Interleaved log lines: a frequent non-error shape keeps its first two and its last line."""
    counts: dict[str, int] = {}
    for line in lines:
        if line.no and not _kept(line):
            key = shape(line.text)
            if key:
                counts[key] = counts.get(key, 0) + 1
    seen: dict[str, int] = {}
    out: list[Line] = []
    for line in lines:
        key = shape(line.text) if line.no and not _kept(line) else ""
        total = counts.get(key, 0)
        if total < SHAPE_MIN:
            out.append(line)
            continue
        seen[key] = seen.get(key, 0) + 1
        n = seen[key]
        if n <= 2 or n == total:
            out.append(line)
            if n == 2:
                out.append(Line(0, f"[{total - 3} more lines like the above omitted: {key}]"))
        else:
            run.drop(line, "frequent log line")
    return out


def collapse_shape_blocks(lines: list[Line], max_period: int, run) -> list[Line]:
    """A block of 2..max_period lines repeated with only numbers changing keeps its first and last copy."""
    return collapse_periodic(lines, max_period, run, key=lambda text: _NUM.sub("#", text), min_reps=4,
                             keep_last=True)


class PythonRunFilter(StreamFilter):
    """Buffered: needs the whole output to see blocks; emits at flush."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[Line] = []

    def feed_line(self, line: str) -> None:
        if "\r" in line.rstrip("\r"):
            line = _CR_REDRAW.sub("", line)   # progress redraws: what was drawn last
        self.lines.append(self.line(line))

    def flush(self) -> None:
        lines = self._trim_frames(self.lines)
        lines = _collapse_repeats(lines, self._run)
        lines = _collapse_blocks(lines, 8, self._run)
        lines = collapse_shape_blocks(lines, 6, self._run)
        lines = collapse_similar(lines, self._run)
        lines = collapse_shapes(lines, self._run)
        for line in lines:
            self.emit(line.text)

    def _trim_frames(self, lines: list[Line]) -> list[Line]:
        """Library frames keep their File line only; caret lines go everywhere."""
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
            if in_lib and text.startswith("    ") and not _kept(line):
                self._run.drop(line, "library frame source line")
                continue
            in_lib = False
            if _JS_FRAME.match(text) and _LIB_PATH.search(text) and not _kept(line):
                self._run.drop(line, "library stack frame")
                continue
            out.append(line)
        return out
