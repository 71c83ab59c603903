"""The first transforms: ANSI strip, progress-redraw resolution, run-collapse, line budget.

Not responsible for tool-specific knowledge (filters/ and content/ hold that).
Invariant: pure functions; every dropped line is reported as a Removal; verbatim-class lines
and the lines observe/keep.py protects are kept by the line budget whatever the budget says.
"""

from __future__ import annotations

import re

from capsule.observe import keep, markers, rarity
from capsule.observe.content import gate
from capsule.observe.guard import budgets
from capsule.observe.transform_types import Context, Removal, TransformResult
from capsule.observe.verbatim import is_salient

ANSI_RE = markers.ANSI_RE


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
    """The salience model's cut (observe/rarity.py) within the line budget: the pinned, verbatim
    and salient lines whatever the budget, a repeated template's first line, then the head and the
    tail; one marker per omitted run, saying how many lines and which (observe/markers.py).

    `already_removed`: lines an earlier step folded away (a collapsed run), not counted here."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    if budget is None:
        table = budgets()["aggressive" if ctx.mode == "aggressive" else "budgets"]
        budget = table["grep"] if ctx.family in ("grep", "rg") else table["bash"]
    if len(lines) <= budget:
        return TransformResult(text, "line_budget")
    pinned = set(keep.extra(text, ctx.exit_code)) | {i for i, ln in enumerate(lines) if is_salient(ln)}
    out, removed = rarity.shape(text, budget, pinned)
    if removed == 0:
        return TransformResult(text, "line_budget")
    removals = []
    for ln in out.split("\n"):
        m = markers.parse(ln)
        if m is not None and m[1] is not None:
            removals.append(Removal("salience model: routine lines", m[0], m[1], m[2], lines[m[1] - 1][:120]))
    return TransformResult(out, "line_budget", removals)


def default_text(text: str, ctx: Context) -> TransformResult:
    """For commands no filter knows: strip ANSI, resolve redraws, then over the line budget the
    salience model's cut (never a blind head and tail), within it identical runs collapsed."""
    notes = []
    stripped = ANSI_RE.sub("", text)
    if stripped != text:
        notes.append("ansi stripped")
    resolved, redrawn = resolve_redraws(stripped)
    removals: list[Removal] = []
    if redrawn:
        removals.append(Removal("progress redraws: last frame kept", 0, preview=f"{redrawn} lines redrawn"))
    capped = line_budget(resolved, ctx)
    if capped.text == resolved:      # within the budget: only identical runs fold (losslessly)
        capped = run_collapse(resolved, ctx)
    removals += capped.removals
    return TransformResult(capped.text, "default", removals, lossless=not removals and not redrawn, notes=notes)
