"""The session's failing frames, and the read door's task-cut view (issue 29.3).

Responsible for remembering the (file, line) frames of the session's recent failures, one small
owner-only JSON file per session, and for the ctx_read footer of a task-cut view. Not responsible
for picking the regions or rendering the view (observe/read_focus.py: the one implementation every
door's read uses), for the outline (observe/content/outline.py), for archiving the original (the
engine does; the footer names its handle), for the session's failure names (observe/salience.py)
nor for the cues themselves (observe/cues.py).
Invariant: deterministic (same text and cues -> same bytes); every kept region is whole and in file
order; every line is one `ctx expand --lines A-B` away; no cue -> None (the plain outline is served).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from capsule.ground.lines import split_lines
from capsule.observe import read_focus
from capsule.observe.cues import Cues, same_file

MAX_FRAMES = 32
MAX_AGE_S = 3600.0
SCAN_CHARS = 1 << 20
_FRAME = re.compile(r'File "([^"]+)", line (\d+)|(?:^|[\s(])([\w./-]+\.\w+):(\d+)(?::\d+)?(?=[:)\s]|$)')


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


def view(source: str, rel: str, outline_text: str, bodies, cue: Cues, archive) -> str | None:
    """The read door's task-cut view (observe/read_focus.py, the one every door's read uses) with
    its footer: what was kept and how any omitted line comes back; None when the cues point at
    nothing here. `archive()` stores the original and returns its handle."""
    got = read_focus.cut(source, rel, read_focus.shown_rows(outline_text), bodies, cue)
    if got is None:
        return None
    out, picked = got
    handle = archive()
    out.append(f"[{read_focus.summary(rel, len(split_lines(source)), picked)}; any omitted "
               f"lines: capsule ctx expand '<<ccr:{handle}>>' --lines A-B (ctx_expand lines=A-B)]")
    return "\n".join(out) + "\n"
