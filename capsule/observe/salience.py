"""Session salience: what a session's failures named (failing test ids, the functions and files of
its tracebacks, identifiers in its error lines), remembered per session, ranks first in that
session's later cuts at every door (the engine hands the names to the transforms with the intent).

Not responsible for ranking (the intent-aware transforms are) nor for when a session ends.
Invariant: pure extraction (names_in) plus one small owner-only JSON file per session under the
state dir (MAX_NAMES names, newest first, older than MAX_AGE_S forgotten); any store trouble
means no salience, never a failed observation.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from capsule.ground import paths

MAX_NAMES = 16
MAX_AGE_S = 3600.0
SCAN_BYTES = 1 << 20            # a failure's names are read from its first MiB
MAX_LINE = 2000                 # ... from its lines up to this long
_TEST_ID = re.compile(r"(?:^|\s)(?:FAILED|ERROR)\s+(\S+?::\S+?)(?:\s|$)|(\S+?::\S+?) (?:FAILED|ERROR)\b|^--- FAIL: (\w+)"
                      r"|^FAIL: (\w+) \(|^\s*✕ (.+?)(?: \(\d+ ?m?s\))?$")
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (\S+)|^\s+at (?:async )?([\w$.]+) \(([^():]+):\d+:\d+\)')
_ERROR = re.compile(r"^(?:E\s+|\w*(?:Error|Exception|Failure)\b:?\s)(.*)$")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+\b|\b[a-z]+[A-Z]\w+\b")


def names_in(text: str) -> list[str]:
    """The names a failure's output points at, most specific first, each once."""
    out: list[str] = []
    for line in text[:SCAN_BYTES].split("\n"):
        if len(line) > MAX_LINE:
            continue        # a serialised blob, not a report; and the patterns would crawl over it
        m = _TEST_ID.search(line)
        if m:
            tid = next(g for g in m.groups() if g)
            leaf = tid.split("::")[-1].split("[")[0]
            out += [leaf, leaf[5:] if leaf.startswith("test_") else leaf]
            if "::" in tid:
                out.append(tid.split("::")[0].rsplit("/", 1)[-1])
            continue
        m = _FRAME.match(line)
        if m:
            path, func = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            if "site-packages" not in path and "/lib/python" not in path and "node:" not in path:
                if not func.startswith("<"):
                    out.append(func.rsplit(".", 1)[-1])
                out.append(path.rsplit("/", 1)[-1])
            continue
        m = _ERROR.match(line)
        if m:
            out += _IDENT.findall(m.group(1))[:4]
    return [n for n in dict.fromkeys(out) if len(n) >= 3][:MAX_NAMES]


def _file(state_dir: Path, scope: str) -> Path:
    safe = "".join(c for c in scope if c.isalnum() or c in "-_")[:80] or "local"
    return Path(state_dir) / "salience" / f"{safe}.json"


def recall(state_dir: Path, scope: str | None, now: float | None = None) -> list[str]:
    if not scope:
        return []
    try:
        data = json.loads(_file(state_dir, scope).read_text())
    except (OSError, ValueError):
        return []
    now = time.time() if now is None else now
    if not isinstance(data, dict) or now - float(data.get("t", 0)) > MAX_AGE_S:
        return []
    return [str(n) for n in data.get("names", [])][:MAX_NAMES]


def learn(state_dir: Path, scope: str | None, text: str, exit_code: int | None) -> None:
    """After a failing observation: its names go first in the session's list."""
    if not scope or exit_code in (0, None):
        return
    found = names_in(text)
    if not found:
        return
    try:
        names = list(dict.fromkeys(found + recall(state_dir, scope)))[:MAX_NAMES]
        path = _file(state_dir, scope)
        paths.private_dir(path.parent)
        paths.write_private(path, json.dumps({"t": time.time(), "names": names}))
    except OSError:
        pass


def with_intent(intent: str | None, names: list[str]) -> str | None:
    """The goal the transforms rank by: the agent's own, then the session's salient names."""
    if not names:
        return intent
    tail = "session failures named: " + " ".join(names)
    return f"{intent} {tail}" if intent else tail
