"""Read-stub bookkeeping: which scope has already seen which version of which read.

Responsible for deciding, per scope (one conversation, or one subagent task `task:<id>`), whether a
read goes out in full, as a short stub (unchanged), or as a line delta against the version that
scope saw. Not responsible for producing the read itself (capsule/retrieve/reader.py does).
Invariants: holds hashes only, never content; a stub or delta goes only to a scope that received
the content, never across scopes; every write is tmp + rename under a lock; compaction purges a scope.
"""

from __future__ import annotations

import difflib
import fcntl
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from blake3 import blake3

from capsule.ground import paths
from capsule.ground.lines import split_lines
from capsule.ground.tokens import count

VERSION = 1
MAX_CHANGED_LINES = 120      # past this, a changed file goes out in full again
MAX_SCOPES = 64              # LRU caps keep the file small
MAX_ENTRIES_PER_SCOPE = 2000
STUB_TOKEN_CAP = 20
LINE_HASH_HEX = 12
MAX_HASHED_LINES = 20_000


def content_hash(text: str) -> str:
    return blake3(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def line_hashes(text: str) -> list[str]:
    return [blake3(line.encode("utf-8", "surrogateescape")).hexdigest()[:LINE_HASH_HEX]
            for line in split_lines(text)]


@dataclass(frozen=True)
class Decision:
    kind: str   # "full" | "stub" | "delta"
    text: str   # what to send


def stub_text(path: str) -> str:
    """The unchanged stub, kept within STUB_TOKEN_CAP tokens by shortening the path."""
    shown = path
    parts = Path(path).parts
    while True:
        text = f"[unchanged since you read it: {shown}]"
        if count(text) <= STUB_TOKEN_CAP or len(parts) <= 1:
            break
        parts = parts[1:]
        shown = ".../" + "/".join(parts)
    if count(text) > STUB_TOKEN_CAP:
        text = "[unchanged since you read it]"
    return text


def render_delta(path: str, old: list[str], new_text: str) -> tuple[str, int]:
    """A delta of new_text against the version whose line hashes are `old`.

    Shows new lines with their current numbers; removed lines are named by their old numbers only
    (their content is what the reader already has). Returns (text, changed line count).
    """
    new_lines = split_lines(new_text)
    matcher = difflib.SequenceMatcher(None, old, line_hashes(new_text), autojunk=False)
    body: list[str] = []
    changed = 0
    hunks = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        hunks += 1
        changed += max(i2 - i1, j2 - j1)
        if op == "delete":
            body.append(f"- old lines {i1 + 1}-{i2} removed" if i2 - i1 > 1 else f"- old line {i2} removed")
            continue
        if op == "replace":
            span = f"old lines {i1 + 1}-{i2}" if i2 - i1 > 1 else f"old line {i2}"
            body.append(f"~ {span} now read:")
        else:
            body.append(f"+ inserted after old line {i1}:")
        body.extend(f"{j + 1}| {new_lines[j]}" for j in range(j1, j2))
    head = (f"[changed since you read it: {path}; {changed} line(s) in {hunks} place(s); "
            f"numbers after | are current]")
    return "\n".join([head, *body]), changed


class StubStore:
    """stubs.json: {"version", "scopes": {scope: {"t": last use, "reads": {path\\0mode: entry}}}}."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else paths.stubs_path()

    # -- file handling -------------------------------------------------------------------------
    @contextmanager
    def _locked(self):
        paths.private_dir(self.path.parent)
        with open(paths.open_private(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
            if isinstance(data, dict) and data.get("version") == VERSION and isinstance(data.get("scopes"), dict):
                return data
        except (OSError, ValueError):
            pass  # missing or unreadable bookkeeping: start over; the worst case is a full re-send
        return {"version": VERSION, "scopes": {}}

    def _save(self, data: dict) -> None:
        scopes = data["scopes"]
        if len(scopes) > MAX_SCOPES:
            for name in sorted(scopes, key=lambda s: scopes[s]["t"])[: len(scopes) - MAX_SCOPES]:
                del scopes[name]
        paths.write_private(self.path, json.dumps(data, separators=(",", ":")))

    # -- the decision --------------------------------------------------------------------------
    def decide(self, scope: str, path: str, mode: str, text: str, fresh: bool = False) -> Decision:
        """What to send `scope` for this read, and record that the scope now holds `text`."""
        if not scope:
            raise ValueError("a read needs a scope (conversation or task:<id>)")
        key = f"{path}\0{mode}"
        digest = content_hash(text)
        with self._locked():
            data = self._load()
            entry_scope = data["scopes"].setdefault(scope, {"t": 0, "reads": {}})
            entry_scope["t"] = time.time()
            reads = entry_scope["reads"]
            seen = reads.pop(key, None)  # re-inserted below: dict order is the LRU order
            decision = Decision("full", text)
            if seen and not fresh:
                if seen["h"] == digest:
                    decision = Decision("stub", stub_text(path))
                elif seen.get("l") is not None:
                    delta, changed = render_delta(path, seen["l"], text)
                    if changed <= MAX_CHANGED_LINES and len(delta) < len(text):
                        decision = Decision("delta", delta)
            hashes = line_hashes(text)
            # Past MAX_HASHED_LINES no delta is kept (a change re-sends in full): keeps the file small.
            reads[key] = {"h": digest, "l": hashes if len(hashes) <= MAX_HASHED_LINES else None}
            while len(reads) > MAX_ENTRIES_PER_SCOPE:
                del reads[next(iter(reads))]
            self._save(data)
        return decision

    def purge(self, scope: str | None = None, prefix: str | None = None) -> int:
        """Forget one scope (compaction, task end), the scopes starting with `prefix`, or all."""
        with self._locked():
            data = self._load()
            if scope is None and prefix is None:
                gone = len(data["scopes"])
                data["scopes"] = {}
            else:
                names = [n for n in data["scopes"] if n == scope or (prefix is not None and n.startswith(prefix))]
                for name in names:
                    del data["scopes"][name]
                gone = len(names)
            self._save(data)
        return gone

    def scopes(self) -> list[str]:
        return sorted(self._load()["scopes"])

    def seen(self, scope: str, path: str, mode: str) -> str | None:
        """The content hash `scope` holds for this read, or None."""
        entry = self._load()["scopes"].get(scope, {}).get("reads", {}).get(f"{path}\0{mode}")
        return entry["h"] if entry else None
