"""A read cut by the task: a source file over the read budget as its outline plus, whole, the regions
the task points at (issue 29.3).

Responsible for picking the file's regions by the task's cues (observe/cues.py: the one cue reader and
BM25 ranking, shared with the search cut) and for rendering the view. The session's frames (file,
line) of recent failures are remembered here, one small owner-only JSON file per session.
Not responsible for the outline itself (observe/content/outline.py), for archiving the original
(the engine does; the footer names its handle), for the session's failure names (observe/salience.py)
nor for the cues themselves (observe/cues.py).
Invariant: deterministic (same text and cues -> same bytes); every kept region is whole and in file
order; every line is one `ctx expand --lines A-B` away; no cue -> None (the plain outline is served).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import namedtuple
from pathlib import Path

from capsule.ground import tokens
from capsule.ground.lines import split_lines
from capsule.observe import markers
from capsule.observe.cues import REGION_BUDGET_TOKENS, Cues, rank, same_file

MAX_REGION_LINES = 400          # a body longer than this is shown as a window around its hot line
HEADER_ROWS = 4                 # a body's header: at most this many kept rows above it
WINDOW = 12                     # lines either side of a hot line outside any body
MAX_FRAMES = 32
MAX_AGE_S = 3600.0
SCAN_CHARS = 1 << 20
_FRAME = re.compile(r'File "([^"]+)", line (\d+)|(?:^|[\s(])([\w./-]+\.\w+):(\d+)(?::\d+)?(?=[:)\s]|$)')
Region = namedtuple("Region", ("first", "last", "why"))


def frames_in(text: str) -> list[tuple[str, int]]:
    """(path, line) of each traceback frame or `path:line:` location in a failure's output, innermost
    (last printed) first, each once."""
    out: list[tuple[str, int]] = []
    for line in text[:SCAN_CHARS].split("\n"):
        if len(line) > 2000:
            continue
        for m in _FRAME.finditer(line):
            path, num = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            out.append((path, int(num)))
    return list(dict.fromkeys(reversed(out)))


def _file(state_dir: Path, scope: str) -> Path:
    safe = "".join(c for c in scope if c.isalnum() or c in "-_")[:80] or "local"
    return Path(state_dir) / "focus" / f"{safe}.json"


def learn(state_dir: Path, scope: str | None, text: str) -> None:
    """Remember a failure's frames for the session's later reads; store trouble is ignored."""
    frames = frames_in(text)
    if not frames:
        return
    try:
        path = _file(state_dir, scope or "local")
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        old = [f for f in _load(path) if time.time() - f[2] < MAX_AGE_S]
        now = time.time()
        new = [[p, n, now] for p, n in frames] + [f for f in old if (f[0], f[1]) not in set(frames)]
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(new[:MAX_FRAMES], fh)
        os.replace(tmp, path)
    except OSError:
        pass


def frames(state_dir: Path, scope: str | None) -> list[tuple[str, int]]:
    """The session's remembered failing frames (path, line), newest first."""
    return [(str(p), int(n)) for p, n, t in _load(_file(state_dir, scope or "local")) if time.time() - t < MAX_AGE_S]


def recall(state_dir: Path, scope: str | None, rel: str) -> list[int]:
    """The hot lines of `rel` in the session's remembered frames, newest first."""
    out = []
    for p, n, t in _load(_file(state_dir, scope or "local")):
        if time.time() - t < MAX_AGE_S and same_file(p, rel):
            out.append(int(n))
    return list(dict.fromkeys(out))


def _load(path: Path) -> list:
    try:
        data = json.loads(path.read_text())
        return [f for f in data if isinstance(f, list) and len(f) == 3]
    except (OSError, ValueError):
        return []


def chunks(outline_removals, kept_rows: list[int]) -> list[tuple[int, int, str]]:
    """(first, last, name) of each elided body, its first line its header: the kept rows just above
    it (a signature over several lines, or a first comment line the outline kept; at most HEADER_ROWS)."""
    kept = set(kept_rows)
    out = []
    for r in outline_removals:
        if not r.reason.startswith("body of ") or r.start is None:
            continue
        first = r.start
        while first - 1 in kept and r.start - first < HEADER_ROWS:
            first -= 1
        out.append((first, r.end, r.reason[8:]))
    return out


def regions(source_lines: list[str], parts: list[tuple[int, int, str]], cue: Cues) -> list[Region]:
    """The regions to show whole, in priority order, within REGION_BUDGET_TOKENS (the first always)."""
    picked: list[Region] = []

    def enclosing(n: int):
        return next((p for p in parts if p[0] <= n <= p[1]), None)

    for n in cue.lines:                                  # the session's failures, newest first
        if not 1 <= n <= len(source_lines):
            continue
        p = enclosing(n)
        if p is not None and p[1] - p[0] < MAX_REGION_LINES:
            picked.append(Region(p[0], p[1], f"{p[2]} (a failure's frame, line {n})"))
        else:
            picked.append(Region(max(1, n - WINDOW), min(len(source_lines), n + WINDOW), f"a failure's frame, line {n}"))
    lowered = {x.lower() for x in cue.names}
    for p in parts:                                      # bodies the task names exactly
        leaf = p[2].rsplit(".", 1)[-1]
        if leaf in cue.names or leaf.lower() in lowered:
            picked.append(Region(p[0], p[1], f"{p[2]} (named)"))
    texts = [] if picked else ["\n".join(source_lines[a - 1:b]) for a, b, _ in parts]
    for i in rank(texts, cue, [name for _, _, name in parts]):        # else what the words point at
        p = parts[i]
        picked.append(Region(p[0], p[1], f"{p[2]} (matches)"))
    out: list[Region] = []
    used = 0
    for r in picked:
        if r.last - r.first >= MAX_REGION_LINES or any(o.first <= r.first and r.last <= o.last for o in out):
            continue
        cost = tokens.count("\n".join(source_lines[r.first - 1:r.last]))
        if out and used + cost > REGION_BUDGET_TOKENS:
            continue
        out.append(r)
        used += cost
    return out


def view(source: str, rel: str, outline_text: str, bodies, cue: Cues, archive) -> str | None:
    """The outline's declaration lines (the plain read's own) with the task's regions whole, every
    other run of lines one marker (observe/markers.py: its count and line range), each shown line
    as `N: text`; None when the cues point at nothing here. `bodies`: the signatures outline (every
    declaration at every depth), whose elided bodies are the chunks ranked. `archive()` stores the
    original and returns its handle."""
    lines = split_lines(source)
    picked = regions(lines, chunks(bodies.removals, sorted(_rows(bodies.text))), cue)
    if not picked:
        return None
    keep = {n for r in picked for n in range(r.first, r.last + 1)} | set(_rows(outline_text))
    keep |= {n + 1 for n in keep if n + 2 in keep}        # a one-line gap costs less shown than marked
    shown = {n - 1: f"{n}: {lines[n - 1]}" for n in sorted(keep) if n <= len(lines)}
    out = markers.render(lines, shown)
    handle = archive()
    kept = ", ".join(f"{r.first}-{r.last} {r.why}" for r in sorted(picked))
    out.append(f"[{rel}: declarations of {len(lines)} lines with the task's regions whole: {kept}; any omitted "
               f"lines: capsule ctx expand '<<ccr:{handle}>>' --lines A-B (ctx_expand lines=A-B)]")
    return "\n".join(out) + "\n"


def _rows(outline_text: str) -> set[int]:
    """The line numbers an outline shows."""
    return {int(head) for head, sep, _ in (row.partition(": ") for row in outline_text.split("\n"))
            if sep and head.isdigit()}
