"""The patch part of git's outputs (diff, show, log -p, range and combined diffs): files and hunks,
and the budget that decides which changed lines an agent sees.

Not responsible for commit headers, --stat lines or anything outside a file's diff
(git_stream.GitFilter owns those and hands each file's lines here).
Invariant: a diff whose changed lines fit `full_tokens` shows every changed line (with `context`
lines around); a larger one shows every file's header and meta lines (renames, modes, binary),
its +/- counts when any of its hunks is hidden, and hunks in order within a budget shared fairly
by commits, then by files; conflict regions and lines the keep rules pin are always shown;
every hidden line is a Removal with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_RANGE = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_COMBINED = re.compile(r"^(@@@+) ")
_CONFLICT = re.compile(r"^(<<<<<<<|=======$|>>>>>>>|\|\|\|\|\|\|\|)")
KEEP_META = ("deleted file", "new file", "similarity", "dissimilarity", "rename ", "copy ", "old mode",
             "new mode", "Binary files", "GIT binary patch")


def cost(text: str) -> int:
    """Tokens a line costs, estimated (~4 characters a token, plus its newline): the budget is in
    tokens, and the estimate keeps a 10,000-line diff from being tokenized twice."""
    return len(text) // 4 + 1


@dataclass
class Hunk:
    head: tuple[int, str]
    parents: int                     # 1 for a unified diff, 2+ for a combined (merge) diff
    lines: list[tuple[int, str]] = field(default_factory=list)
    old_left: int = -1               # lines still expected (unified diffs; -1: unknown, combined)
    new_left: int = -1
    _near: tuple[int, list[bool]] | None = field(default=None, repr=False)
    _cost: tuple[int, int] | None = field(default=None, repr=False)

    def open(self) -> bool:
        """Does the next line (if it has a diff prefix) still belong to this hunk?"""
        return self.old_left < 0 or self.old_left > 0 or self.new_left > 0

    def add(self, no: int, text: str) -> None:
        self.lines.append((no, text))
        if self.old_left < 0 or text.startswith("\\"):
            return
        mark = text[:1]
        if mark != "+":
            self.old_left -= 1
        if mark != "-":
            self.new_left -= 1

    def changed(self, text: str) -> str:
        """'+', '-', '' (context) or '\\' for one of this hunk's lines."""
        if text.startswith("\\"):
            return "\\"
        prefix = text[:self.parents]
        return "+" if "+" in prefix else "-" if "-" in prefix else ""

    def near(self, context: int) -> list[bool]:
        """Which lines a reader needs: the changed ones and `context` lines around each (computed
        once: the lines are complete when a view asks)."""
        if self._near is not None and self._near[0] == context:
            return self._near[1]
        flags = [self.changed(t) != "" for _, t in self.lines]
        out = [False] * len(flags)
        last = -context - 1
        for i, f in enumerate(flags):
            if f:
                last = i
            out[i] = i - last <= context
        last = len(flags) + context
        for i in range(len(flags) - 1, -1, -1):
            if flags[i]:
                last = i
            out[i] = out[i] or last - i <= context
        self._near = (context, out)
        return out

    def cost(self, context: int) -> int:
        """Tokens of the hunk as a view shows it whole: its header and the lines near a change."""
        if self._cost is None or self._cost[0] != context:
            total = cost(self.head[1]) + sum(cost(t) for (_, t), near in zip(self.lines, self.near(context)) if near)
            self._cost = (context, total)
        return self._cost[1]

    def conflict(self) -> list[bool]:
        """Lines of a conflict region (from `<<<<<<<` to `>>>>>>>`, markers included)."""
        p = self.parents
        if not any(t[p:p + 7] in ("<<<<<<<", "=======", ">>>>>>>", "|||||||") for _, t in self.lines):
            return [False] * len(self.lines)
        out, inside = [], False
        for _, t in self.lines:
            body = t[self.parents:]
            m = _CONFLICT.match(body)
            if m and m.group(1) == "<<<<<<<":
                inside = True
            out.append(inside or bool(m))
            if m and m.group(1) == ">>>>>>>":
                inside = False
        return out


def start_hunk(no: int, text: str) -> Hunk:
    m = _RANGE.match(text)
    if m:
        old = int(m.group(1)) if m.group(1) is not None else 1
        new = int(m.group(2)) if m.group(2) is not None else 1
        return Hunk((no, text), 1, old_left=old, new_left=new)
    c = _COMBINED.match(text)
    return Hunk((no, text), len(c.group(1)) - 1 if c else 1)


@dataclass
class FileDiff:
    commit: int
    head: list[tuple[int, str]] = field(default_factory=list)     # diff/index/mode/---/+++ lines
    hunks: list[Hunk] = field(default_factory=list)

    def counts(self) -> tuple[int, int]:
        adds = dels = 0
        for h in self.hunks:
            for _, t in h.lines:
                c = h.changed(t)
                adds += c == "+"
                dels += c == "-"
        return adds, dels


def waterfill(budget: int, needs: list[int]) -> list[int]:
    """Share `budget` so that no one gets more than it needs and the rest is split evenly
    (max-min fairness): one huge file cannot starve the small ones beside it."""
    out = [0] * len(needs)
    left = budget
    order = sorted(range(len(needs)), key=lambda i: (needs[i], i))
    for k, i in enumerate(order):
        share = left // (len(needs) - k)
        out[i] = min(needs[i], share)
        left -= out[i]
    return out


def note(adds: int, dels: int, hunks: int, whole: int, part: bool) -> str:
    """The line that stands for a file's hidden hunks (never shaped like the `[N more lines]` marker)."""
    n = f"{hunks} hunk{'s' if hunks != 1 else ''}"
    if whole == 0:
        shown = "1 shown in part" if part else "none shown"
    else:
        shown = f"{whole} shown" + (", 1 in part" if part else "")
    return f"[+{adds} -{dels} lines in {n}; {shown}]"
