"""Streaming pytest filter: failures, errors, locations and the summary; no passing tests.

Not responsible for other runners (unittest is a TOML filter). Reads pytest's sections
(session header, progress, FAILURES/ERRORS, warnings, short summary) line by line.
Invariant: every E line, location line in the project's code, FAILED/ERROR line and the final
tally survive (library frames and a `>` source line already shown go; a test header loses its
padding; `-v` lines of tests that did not fail become one count line per file); a nonzero exit
with nothing kept emits the last lines rather than an empty success.
"""

from __future__ import annotations

import re

from capsule.observe.filters.streaming import StreamFilter
from capsule.observe.verbatim import is_verbatim

_SECTION = re.compile(r"^={3,} (.*?) ={3,}$")
_TALLY = re.compile(r"^(=+ )?(no tests ran|\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|selected|tests? collected)\b.*)")
# a test's header: `____ name ____`, down to `_ name _` when the id is wider than the terminal
# (not the `_ _ _ _` line between two frames of one traceback)
_TEST_HEADER = re.compile(r"^_+ (?!(?:_ )*_$).*\S _+$")
_LOCATION = re.compile(r"^\S+:\d+: ")
_PROGRESS = re.compile(r"^\S+\.py (\.|s|x|F|E|X)+\s*(\[\s*\d+%\])?$|^[.sxFEX]+\s*(\[\s*\d+%\])?$")
_VERBOSE = re.compile(r"^\S+::\S.* (PASSED|SKIPPED|XFAIL|XPASS|FAILED|ERROR)\b")
_INTROSPECTION = re.compile(r"^E\s+\+\s+(where|and)\s")
_KEEP_IN_BLOCK = re.compile(r"^(>|E |E$)|^\S.*(Error|Exception|Warning)\b|^ImportError while")
# --tb=short/--tb=auto's frame: `path:N: in func` then the statement it ran (no `>` mark)
_FRAME_AT = re.compile(r"^\S+:\d+: in \S+")
_STATEMENT = re.compile(r"^\s+(raise|assert)\b")
_OUTCOME = {"PASSED": "passed", "SKIPPED": "skipped", "XFAIL": "xfailed", "XPASS": "xpassed"}
# A frame inside an installed library or the standard library (pytest's own import machinery,
# importlib): the engineer acts on the frames in their own code, which stay.
_LIBRARY_FRAME = re.compile(r"^\S*(/site-packages/|/dist-packages/|/lib/python\d[\d.]*/)\S*:\d+: ")
_HEADER_PAD = re.compile(r"^_+ (?!(?:_ )*_$)(.*?\S) _+$")


class PytestFilter(StreamFilter):
    ranged_markers = True

    def __init__(self) -> None:
        super().__init__()
        self.section = "header"
        self.captured = 0
        self.tail: list[str] = []
        self.sources: set[str] = set()   # `>` source lines already shown in an earlier block
        self.after_frame = False          # the previous line was a `path:N: in func` frame
        self.counts: dict[str, dict[str, int]] = {}   # verbose lines dropped: file -> outcome -> n

    def _progress(self, line: str, reason: str) -> bool:
        """A `-v` line of a test that did not fail: dropped and counted per file (True), or kept."""
        m = _VERBOSE.match(line.strip())
        if not m or m.group(1) not in _OUTCOME:
            return False
        before = len(self.out)
        self.keep_if(line, False, reason, told=True)     # _emit_counts's line counts it
        if len(self.out) == before:
            per = self.counts.setdefault(line.strip().split("::", 1)[0], {})
            per[_OUTCOME[m.group(1)]] = per.get(_OUTCOME[m.group(1)], 0) + 1
        return True

    def _emit_counts(self) -> None:
        """Where the verbose progress ends: one line per file, `path: N passed, M skipped`."""
        if not self.counts:
            return
        limit = int(self.options.get("file_counts", 40))
        files = list(self.counts.items())
        for name, per in files[:limit]:
            self.emit(f"{name}: " + ", ".join(f"{n} {o}" for o, n in per.items()))
        if len(files) > limit:
            rest: dict[str, int] = {}
            for _, per in files[limit:]:
                for o, n in per.items():
                    rest[o] = rest.get(o, 0) + n
            self.emit(f"(+ {len(files) - limit} more files: " + ", ".join(f"{n} {o}" for o, n in rest.items()) + ")")
        self.counts = {}

    def feed_line(self, line: str) -> None:
        self.tail = (self.tail + [line])[-5:]
        stripped = line.strip()
        if self.counts and (_SECTION.match(stripped) or stripped.startswith("!!!")):
            self._emit_counts()     # the progress is over: a section (or the tally) starts
        m = _SECTION.match(stripped)
        if m and not _TALLY.match(stripped):
            title = m.group(1).lower()
            self.section = ("failures" if title in ("failures", "errors") else
                            "warnings" if "warnings summary" in title else
                            "summary" if "short test summary" in title else
                            "passes" if title == "passes" else
                            "durations" if "durations" in title else
                            "header" if "session starts" in title else "other")
            self.keep_if(line, self.section in ("durations",), "pytest section banner")
            return
        if _TALLY.match(stripped) or stripped.startswith("!!!"):
            self.emit(line)
            return
        if self.section == "header":
            if not self._progress(line, "passing test progress"):
                # progress dots are told by the tally line (`N passed`), the header is not
                self.keep_if(line, False, "session header / progress", told=bool(_PROGRESS.match(stripped)))
            return
        if self.section == "failures":
            if stripped.startswith("----") and "Captured" in stripped:
                self.captured = int(self.options.get("captured_lines", 5)) + 1
                self.emit(line)
                return
            if self.captured:
                self.captured -= 1
                self.keep_if(line, bool(stripped) and self.captured > 0, "captured output beyond its first lines")
                return
            header = _HEADER_PAD.match(line)
            if header and not is_verbatim(line) and self.lineno not in self.pinned:
                self.emit(f"___ {header.group(1)} ___")   # the test name without the padding
                return
            if _LIBRARY_FRAME.match(line):
                self.keep_if(line, False, "library frame")
                return
            if line.startswith(">") or (self.after_frame and _STATEMENT.match(line)):
                # the failing statement (`>` mark; --tb=short: the line under its frame)
                seen = line in self.sources
                self.sources.add(line)
                if seen:    # the same text is on screen already (the guard judges lines by text)
                    self.after_frame = False
                    self.drop(line, "source line shown in an earlier block")
                    return
            keep = bool(_TEST_HEADER.match(stripped) or _LOCATION.match(line) or _KEEP_IN_BLOCK.match(line)
                        or (self.after_frame and _STATEMENT.match(line)))
            if _INTROSPECTION.match(line):
                keep = False      # pytest's "+  where x = f()" rewriting detail
            self.after_frame = bool(_FRAME_AT.match(line))
            self.keep_if(line, keep, "test source / repr context")
            return
        if self.section == "warnings":
            keep = bool(re.search(r"Warning\b", line)) and not line.startswith("-- Docs")
            self.keep_if(line, keep, "warning context")
            return
        if self.section == "summary":
            self.keep_if(line, not stripped.startswith("PASSED"), "passing test", told=True)
            return
        if self.section == "passes":
            self.keep_if(line, False, "passing test output")
            return
        if self.section == "durations":
            self.keep_if(line, bool(stripped), "blank line")
            return
        # progress lines outside a header (pytest -q prints no header)
        if self._progress(line, "passing test progress"):
            return
        if _PROGRESS.match(stripped):
            self.keep_if(line, False, "passing test progress", told=True)     # the tally counts them
            return
        self.keep_if(line, bool(stripped), "blank line")

    def flush(self) -> None:
        self._emit_counts()

    def on_exit(self, exit_code: int | None) -> None:
        if exit_code not in (0, None) and not any(s.strip() for s in self.out):
            for line in self.tail:  # never turn a failed run into an empty success
                self.emit(line)
