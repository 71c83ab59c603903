"""KEEP: the lines no lossy transform may drop, judged on the whole text and the exit status.

Responsible for the rules that one line's words cannot decide (verbatim.py decides those):
error blocks (the line a panic/exception header announces, `Caused by`/`note:`/`help:` and
indented message continuations), the log anomalies anomalies.py finds (rare field values,
numeric outliers, a level above the dominant one, a failing run's rare templates); and the
text a tool quotes rather than reports (diff hunks, commit messages, the source in a code frame
or a pytest failure, passing test ids), whose words do not make a line an error.
Not responsible for dropping anything: filters, budgets, log clustering and the reflex ask it.
Invariant: deterministic and linear in the lines (tokens per line capped); the set it returns
holds original 0-based line indices and includes every verbatim-class line.
"""

from __future__ import annotations

import re
from collections import namedtuple
from functools import lru_cache

from capsule.observe import digits
from capsule.observe.anomalies import FRAME as _FRAME, anomalies
from capsule.observe.verbatim import verbatim_flags
from capsule.observe.verbatim import strip_ansi

CONTINUATION_MAX = 6     # indented lines after an error header that still belong to it

_HUNK = re.compile(r"^@@+ -\d+(?:,\d+)? .*@@")
_COMMIT = re.compile(r"^commit [0-9a-f]{7,64}(?: \(.*\))?$")
_DIFFSTAT = re.compile(r"^ \S.*? +\| +(?:\d+ ?[+-]*|Bin\b.*)$")   # ` path/to/file | 12 ++--`: a file name
_COMMIT_HEADER = re.compile(r"^[A-Z][A-Za-z]*:\s")      # Author:, Date:, Merge:, CommitDate: …
_ANNOUNCES = re.compile(r":\s*$|panicked at|^\s*Traceback \(most recent call last\)")
_CONTINUES = re.compile(r"^\s*(?:=\s*)?(?:Caused by\b|caused by\b|note:|help:|Note:|Help:|NOTE:)")


def split(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class Analysis(namedtuple("Analysis", ("protected", "extra", "frames", "flags", "lines", "masked"))):
    """What _analyse works out once per text (and failing status). A collections.namedtuple, like
    the door's values (ground/types.py): typing's NamedTuple costs a cold `ctx run` the typing import.
    protected: every line that must survive, verbatim lines included (frozenset of indices);
    extra: the protected lines that are not verbatim-class on their own; frames: source lines a
    diagnostic quotes (code_frames); flags: is_verbatim of each line; lines: the text's lines
    (split); masked: digits.masked(lines), or None."""

    __slots__ = ()


def protected(text: str, exit_code: int | None) -> frozenset[int]:
    """0-based indices of the lines of `text` that must survive (verbatim lines included)."""
    return _analyse(text, exit_code not in (0, None)).protected


def extra(text: str, exit_code: int | None) -> frozenset[int]:
    """The protected lines that are not verbatim-class on their own (what filters must add
    to their own verbatim checks)."""
    return _analyse(text, exit_code not in (0, None)).extra


def quoted_source(text: str, exit_code: int | None) -> frozenset[int]:
    """0-based indices of the source lines a diagnostic quotes (code frames, pytest's failure
    excerpts; code_frames): a word there is not the run's error, so a filter's line rules may
    drop them like any other context line."""
    return _analyse(text, exit_code not in (0, None)).frames


def verbatim_by_line(text: str, exit_code: int | None) -> dict[str, bool]:
    """is_verbatim of every line of `text`, keyed by the line: worked out once with the analysis
    above, so a filter over the same text need not ask again."""
    a = _analyse(text, exit_code not in (0, None))
    return dict(zip(a.lines, a.flags))


def lines_of(text: str, exit_code: int | None) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """The lines of `text` as the analysis split them (split) and their digit-masked forms
    (digits.masked): a filter over the same lines splits and masks them no second time."""
    a = _analyse(text, exit_code not in (0, None))
    return a.lines, a.masked


@lru_cache(maxsize=4)
def _analyse(text: str, failing: bool) -> Analysis:
    lines = split(text)
    masked = digits.masked(lines)
    # the rules' digit-free trigger words, looked for in the distinct masked lines, not the text
    probe = digits.distinct_lines(masked) if masked is not None else None
    content = quoted(lines, probe)
    frames = code_frames(lines, probe)
    content |= frames
    flags = verbatim_flags(lines, masked)
    verbatim = [flag and i not in content for i, flag in enumerate(flags)]
    more = error_blocks(lines, verbatim) | anomalies(lines, failing, masked)
    more = {i for i in more if not verbatim[i] and i not in frames}
    return Analysis(frozenset(more | {i for i, v in enumerate(verbatim) if v}), frozenset(more), frozenset(frames),
                    tuple(flags), tuple(lines), None if masked is None else tuple(masked))


def quoted(lines: list[str], probe: str | None = None) -> set[int]:
    """Lines the tool quotes rather than reports: unified-diff hunks (their headers' function
    context and their bodies), the messages
    of git commits and diffstat file lines. A changed line that says `raise ValueError`, or a commit message saying "fix the
    panic on empty input", is text under review, not an error the run hit; the tool's own filter
    (every changed line up to its budget, each commit's subject) decides about it.
    `probe`: digits.distinct_lines of the lines' masks, when the caller has it."""
    out: set[int] = set()
    inside = False
    # Whole-text pre-checks (a line that can match holds the substring, so the text does):
    # a long log with no hunk, commit, table bar or tree branch skips the per-line loops.
    text = probe if probe is not None else "\n" + "\n".join(lines)
    for i, ln in enumerate(lines if "@@" in text else ()):
        if _HUNK.match(ln):
            inside = True
            out.add(i)      # `@@ -46,6 +49,82 @@ def _warn(warning: Warning)`: the function context is quoted code
        elif inside and (ln[:1] in (" ", "+", "-", "\\") or not ln):
            out.add(i)
        else:
            inside = False
    if "commit " in text:
        out |= commit_messages(lines)
    if "|" in text or "── " in text or "-- " in text:
        out |= {i for i, ln in enumerate(lines) if _DIFFSTAT.match(ln) or _named_entry(ln)}
    return out


_DRAWN = ("├── ", "└── ", "|-- ", "`-- ")


def _named_entry(line: str) -> bool:
    """A tree drawing's entry that is one bare name (`│   └── test_FileError.py`, npm ls's
    `├── error-ex@1.3.2`): a file or package name, not a report; `x [error opening dir]` is one."""
    if "── " not in line and "-- " not in line:
        return False
    rest = line.lstrip(" \xa0│|")
    return rest[:4] in _DRAWN and len(rest) > 4 and not any(c.isspace() for c in rest[4:])


# A compiler's or linter's code frame (rustc, cargo, clippy, ruff's full format): after a
# `--> path:line:col` location (or a `help:` that opens a suggestion), gutter lines `  |` carry the
# tool's own labels, numbered lines `12 | code` (and a suggested fix's `12 + code` / `   - code`)
# quote the source, and so does the snippet indented under a `= help: ...:` line.
_ARROW = re.compile(r"^\s*(?:-->|:::)\s*\S+:\d+")
_GUTTER = re.compile(r"^\s*\d*\s*[|│](?:\s|$)")
_NUMBERED = re.compile(r"^\s*\d+\s*[|│+-](?:\s|$)")
_REMOVED = re.compile(r"^\s+-(?:\s|$)")
_ELIDED = re.compile(r"^(?:-{20,}|\s*\.\.\.)\s*$")
_SUGGESTS = re.compile(r"^\s*(?:=\s*)?help:")
# `  = help: add this to Cargo.toml:` then a deeper-indented snippet: suggested text, quoted too
_FRAME_NOTE = re.compile(r"^(\s*)= (?:help|note|suggestion)\b")
# pytest's FAILURES / ERRORS sections: inside a test's block (after its `____ name ____` header,
# outside `---- Captured ... ----` output), 4-space-indented lines are the test's source and
# `name = value` lines its arguments; the `E` lines, `>` line and `path:N:` locations are the report.
_PT_BANNER = re.compile(r"^={3,} (.*?) ={3,}$")
_PT_TEST = re.compile(r"^_+ (?!(?:_ )*_$).*\S _+$")     # `_ id _` when the id is wider than the terminal
_PT_SUB = re.compile(r"^-{3,} (.*?) -{3,}$")
_PT_SOURCE = re.compile(r"^    (?!\s*File \")|^[A-Za-z_]\w* = \S")
# A passing test's verbose line (`-v` progress, `-rA` summary): the id is a name its author chose
# (`test_rejects[Error: bad value]`), and the test passed.
# The command line a build tool echoes before running it (`cargo -v`: `Running \`rustc ...
# --error-format=json ...\``): its flags are not the run's errors.
_ECHOED = re.compile(r"^\s+Running `[^`]+`$")
_PT_PASSED = re.compile(r"^(?:\[gw\d+\] \[\s*\d+%\] )?PASSED \S+::|^\S+::.* PASSED(?:\s+\[\s*\d+%\])?\s*$")


def code_frames(lines: list[str], probe: str | None = None) -> set[int]:
    """The source lines a diagnostic quotes: numbered lines of a code frame, the test source
    pytest prints around a failure, passing tests' ids and echoed commands (see the patterns above)."""
    out: set[int] = set()
    frame = False
    section = block = False
    n = len(lines)
    snippet = -1           # indent of a frame's `= help: ...:` line whose snippet follows
    text = probe if probe is not None else "\n" + "\n".join(lines)      # (as in quoted)
    if not ("\n=" in text or "-->" in text or ":::" in text or "help:" in text or "PASSED" in text
            or "Running `" in text):
        return out         # no line can open a frame or a section, nor be one of the lines below
    for i, ln in enumerate(lines):
        if not (frame or section or ln[:1] == "=" or "-->" in ln or ":::" in ln or "help:" in ln
                or "PASSED" in ln or "Running `" in ln):
            continue       # most lines of a long log can start nothing here (substring tests are cheapest)
        if _ARROW.match(ln) or (_SUGGESTS.match(ln) and i + 1 < n and _GUTTER.match(lines[i + 1])):
            frame, snippet = True, -1
            continue
        if frame:
            note = _FRAME_NOTE.match(ln)
            if note:
                snippet = len(note.group(1)) if ln.rstrip().endswith(":") else -1
                continue
            if snippet >= 0 and ln.strip() and len(ln) - len(ln.lstrip()) > snippet + 2:
                out.add(i)
                continue
            snippet = -1
        if frame and (_GUTTER.match(ln) or _NUMBERED.match(ln) or _REMOVED.match(ln) or _ELIDED.match(ln)):
            if not _GUTTER.match(ln) or _NUMBERED.match(ln):
                out.add(i)
            continue
        frame = False
        banner = _PT_BANNER.match(ln)
        if banner:
            section = banner.group(1).strip() in ("FAILURES", "ERRORS")
            block = False
        elif section and _PT_TEST.match(ln):
            block = True
        elif section and _PT_SUB.match(ln):
            block = "Captured" not in ln
        elif block and _PT_SOURCE.match(ln):
            out.add(i)
        elif "PASSED" in ln and _PT_PASSED.match(ln):
            out.add(i)
        elif _ECHOED.match(ln):
            out.add(i)
    return out


def commit_messages(lines: list[str]) -> set[int]:
    """The message lines of git's commit blocks: after `commit SHA` and its `Name: value` header
    lines, the 4-space-indented (and blank) lines up to the next line that is neither."""
    out: set[int] = set()
    i, n = 0, len(lines)
    while i < n:
        if not _COMMIT.match(lines[i]):
            i += 1
            continue
        i += 1
        while i < n and _COMMIT_HEADER.match(lines[i]):
            i += 1
        while i < n and (lines[i].startswith("    ") or not lines[i].strip()):
            if lines[i].strip():
                out.add(i)
            i += 1
    return out


# ---- error blocks ----------------------------------------------------------------------

def error_blocks(lines: list[str], verbatim: list[bool]) -> set[int]:
    """The lines that finish an error a verbatim header starts: after a header that announces
    more (ends with ':', `panicked at`, a traceback header) its next line and the indented
    lines under it; after any error line, the `Caused by`/`note:`/`help:` lines that follow."""
    keep: set[int] = set()
    n = len(lines)
    for i in range(n):
        if not verbatim[i]:
            continue
        header = lines[i]
        indent = len(header) - len(header.lstrip())
        j = i + 1
        announces = bool(_ANNOUNCES.search(header))
        if announces:
            while j < n and not lines[j].strip() and j - i <= 2:
                j += 1
            if j < n and lines[j].strip() and not _FRAME.match(lines[j]):
                keep.add(j)      # the message the header announces ("index out of bounds: ...")
                j += 1
            else:
                announces = False    # a frame or a source excerpt follows, not a message
        taken = 0
        while j < n and lines[j].strip():
            line = lines[j]
            if _CONTINUES.match(line):
                keep.add(j)
            elif (announces and taken < CONTINUATION_MAX and not _FRAME.match(line)
                  and len(line) - len(line.lstrip()) > indent):
                keep.add(j)      # the announced message goes on, indented under its header
                taken += 1
            else:
                break
            j += 1
    return keep


def missing(original: str, emitted: str, exit_code: int | None) -> list[str]:
    """Protected lines of the original that the emission lost (stripped text compared; a line
    may lose ANSI codes or gain a run count)."""
    analysis = _analyse(original, exit_code not in (0, None))     # its lines split once, with the rules
    lines = analysis.lines
    emitted_lines = {ln.strip() for ln in emitted.split("\n")}
    out: list[str] = []
    seen: set[str] = set()
    for i in sorted(analysis.protected):
        stripped = lines[i].strip()
        if stripped in seen or not stripped:
            continue
        seen.add(stripped)
        bare = strip_ansi(stripped)
        if stripped in emitted_lines or bare in emitted_lines or stripped in emitted or bare in emitted:
            continue
        out.append(lines[i])
    return out
