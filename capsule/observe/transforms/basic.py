"""The first transforms: ANSI strip, progress-redraw resolution, run-collapse, line budget.

Not responsible for tool-specific knowledge (filters/ and content/ hold that).
Invariant: pure functions; every dropped line is reported as a Removal; verbatim-class lines
and the lines observe/keep.py protects are kept by the line budget whatever the budget says.
"""

from __future__ import annotations

import re

from capsule.observe import keep
from capsule.observe.content import gate
from capsule.observe.guard import budgets, marker
from capsule.observe.types import Context, Removal, TransformResult
from capsule.observe.verbatim import is_salient

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def ansi_strip(text: str, ctx: Context) -> TransformResult:
    stripped = ANSI_RE.sub("", text)
    return TransformResult(stripped, "ansi_strip", lossless=True)


def resolve_redraws(text: str) -> tuple[str, int]:
    """A line redrawn with \\r shows only its last frame; keep that frame (CRLF kept as is)."""
    out, redrawn = [], 0
    for line in text.split("\n"):
        body = line[:-1] if line.endswith("\r") else line
        if "\r" in body:
            frames = [f for f in body.split("\r") if f.strip()]
            body = frames[-1] if frames else ""
            redrawn += 1
            line = body + ("\r" if line.endswith("\r") else "")
        out.append(line)
    return "\n".join(out), redrawn


def run_collapse(text: str, ctx: Context) -> TransformResult:
    """Identical consecutive lines once, with their exact count; proven by expanding it back."""
    collapsed, runs = gate.collapse_runs(text)
    if not runs or gate.expand_runs(collapsed) != text:
        return TransformResult(text, "run_collapse", lossless=True)
    lines = text.split("\n")
    removals = [Removal("repeated line", n - 1, i + 2, i + n, lines[i][:120]) for i, n in runs]
    return TransformResult(collapsed, "run_collapse", removals, lossless=True)


def line_budget(text: str, ctx: Context, budget: int | None = None, already_removed: int = 0) -> TransformResult:
    """Head and tail within the budget, verbatim lines between; one marker at the cut.

    `already_removed` counts lines an earlier step folded away, so the single marker's
    N still satisfies kept + N == total for the original text.
    """
    lines = text.split("\n")
    trailing_newline = bool(lines) and lines[-1] == ""
    if trailing_newline:
        lines = lines[:-1]
    if budget is None:
        table = budgets()["aggressive" if ctx.mode == "aggressive" else "budgets"]
        budget = table["grep"] if ctx.family in ("grep", "rg") else table["bash"]
    if len(lines) <= budget:
        return TransformResult(text, "line_budget")
    head_n = int(budget * budgets()["split"]["head_share"])
    tail_n = budget - head_n
    tail_start = len(lines) - tail_n
    kept: list[str] = lines[:head_n]
    removals: list[Removal] = []
    gap_start = None
    middle_kept: list[str] = []
    pinned = keep.extra(text, ctx.exit_code)
    for idx in range(head_n, tail_start):
        if idx in pinned or is_salient(lines[idx]):
            if gap_start is not None:
                removals.append(_gap(lines, gap_start, idx))
                gap_start = None
            middle_kept.append(lines[idx])
        elif gap_start is None:
            gap_start = idx
    if gap_start is not None:
        removals.append(_gap(lines, gap_start, tail_start))
    removed = sum(r.count for r in removals)
    if removed == 0:
        return TransformResult(text, "line_budget")
    body = kept + middle_kept + [marker(removed + already_removed)] + lines[tail_start:]
    result = "\n".join(body) + ("\n" if trailing_newline else "")
    return TransformResult(result, "line_budget", removals)


def _gap(lines: list[str], start: int, stop: int) -> Removal:
    return Removal("beyond line budget", stop - start, start + 1, stop, lines[start][:120])


def default_text(text: str, ctx: Context) -> TransformResult:
    """For commands no filter knows: strip ANSI, resolve redraws, collapse runs, cap lines."""
    notes = []
    stripped = ANSI_RE.sub("", text)
    if stripped != text:
        notes.append("ansi stripped")
    resolved, redrawn = resolve_redraws(stripped)
    removals: list[Removal] = []
    if redrawn:
        removals.append(Removal("progress redraws: last frame kept", 0, preview=f"{redrawn} lines redrawn"))
    collapsed = run_collapse(resolved, ctx)
    removals += collapsed.removals
    capped = line_budget(collapsed.text, ctx, already_removed=collapsed.removed_lines)
    removals += capped.removals
    return TransformResult(capped.text, "default", removals, lossless=not removals and not redrawn, notes=notes)
