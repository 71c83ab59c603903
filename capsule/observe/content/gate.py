"""Gates: a gzip-ratio probe (is this worth an aggressive mode?) and lossless steps that are
proven by inverting them at run time.

Responsible for `compressibility`, `worth_aggressive`, and the checked lossless tier:
run-collapse with exact counts, ANSI strip and trailing-whitespace strip, each with its
inverse. Not responsible for the shell filters' own ANSI/run handling (transforms/basic.py).
Invariant: `lossless()` returns a text whose inverse is byte-equal to its input, or the
input itself.
"""

from __future__ import annotations

import re
import zlib

from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "lossless"
PROBE_BYTES = 65536
INCOMPRESSIBLE = 0.80     # compressed/raw above this: random-ish, skip aggressive modes
MIN_RUN = 3               # identical consecutive lines collapsed from this many

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_RUN = re.compile(r"^(?P<line>.*)  \[×(?P<n>\d+)\]$")


def compressibility(text: str) -> float:
    """zlib-compressed size / raw size over the first PROBE_BYTES (1.0 = incompressible)."""
    data = text.encode("utf-8", "surrogateescape")[:PROBE_BYTES]
    if not data:
        return 1.0
    return len(zlib.compress(data, 6)) / len(data)


def worth_aggressive(text: str) -> bool:
    """The Kolmogorov gate: aggressive modes only pay on compressible text."""
    return compressibility(text) < INCOMPRESSIBLE


# ---- each lossless step returns (output, record); its inverse rebuilds the input exactly


def collapse_runs(text: str) -> tuple[str, list[tuple[int, int]]]:
    """Identical consecutive lines kept once as `line  [×N]`; the record lists (first index, N)."""
    lines = text.split("\n")
    out: list[str] = []
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        n = j - i + 1
        if n >= MIN_RUN and lines[i].strip() and not _RUN.match(lines[i]):
            out.append(f"{lines[i]}  [×{n}]")
            runs.append((i, n))
        else:
            out.extend(lines[i:j + 1])
        i = j + 1
    return "\n".join(out), runs


def expand_runs(text: str, _record=None) -> str:
    out: list[str] = []
    for line in text.split("\n"):
        m = _RUN.match(line)
        if m:
            out.extend([m.group("line")] * int(m.group("n")))
        else:
            out.append(line)
    return "\n".join(out)


def strip_ansi(text: str) -> tuple[str, list[tuple[int, str]]]:
    record: list[tuple[int, str]] = []
    out: list[str] = []
    pos = removed = 0
    for m in _ANSI.finditer(text):
        out.append(text[pos:m.start()])
        record.append((m.start() - removed, m.group(0)))
        removed += len(m.group(0))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out), record


def restore_ansi(text: str, record: list[tuple[int, str]]) -> str:
    out, pos = [], 0
    for at, code in record:
        out.append(text[pos:at])
        out.append(code)
        pos = at
    out.append(text[pos:])
    return "".join(out)


def strip_trailing(text: str) -> tuple[str, list[str]]:
    lines = text.split("\n")
    tails = [ln[len(ln.rstrip(" \t")):] for ln in lines]
    return "\n".join(ln.rstrip(" \t") for ln in lines), tails


def restore_trailing(text: str, tails: list[str]) -> str:
    lines = text.split("\n")
    if len(lines) != len(tails):
        raise ValueError("line count changed")
    return "\n".join(ln + t for ln, t in zip(lines, tails))


STEPS = (
    ("ANSI strip", strip_ansi, restore_ansi),
    ("trailing whitespace", strip_trailing, restore_trailing),
    ("run collapse", collapse_runs, expand_runs),
)


def checked(step, inverse, text: str) -> str | None:
    """step(text) when inverse(step(text)) == text, else None."""
    try:
        out, record = step(text)
        return out if inverse(out, record) == text else None
    except (ValueError, IndexError):
        return None


def lossless(text: str, ctx: Context) -> TransformResult:
    """Transform entry point: every lossless step whose inversion proves it. The ANSI codes
    and trailing spaces are recoverable from the archive; the run counts are exact."""
    notes: list[str] = []
    removals: list[Removal] = []
    current = text
    for name, step, inverse in STEPS:
        out = checked(step, inverse, current)
        if out is None:
            notes.append(f"{name}: inversion failed, step skipped")
            continue
        if out != current:
            notes.append(f"{name}: inverse checked")
            if name == "run collapse":
                removals.append(Removal("identical consecutive lines (exact count kept)",
                                        current.count("\n") - out.count("\n")))
            current = out
    # run collapse is information-preserving; ANSI/whitespace are presentation only
    return TransformResult(current, TRANSFORM_ID, removals=removals, lossless=True, notes=notes)
