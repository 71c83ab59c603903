"""A small on-disk memo for pure, slow answers (a role file validated, a fixed text's token count).

Not responsible for anything that can change under the same key: keys are hashes of every input
(content and the version of whatever computes the answer), so a stale answer cannot be returned.
Invariant: the memo only ever saves time; a missing, damaged or unwritable memo just recomputes.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from capsule.ground import paths

MAX_ENTRIES = 256   # small by design: a few roles and a few standing texts


def key(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def get(name: str, k: str) -> Any | None:
    """The stored answer for key k, or None."""
    return _read(_path(name)).get(k)


def put(name: str, k: str, value: Any) -> None:
    """Store an answer; an unwritable state dir just means the next call recomputes."""
    path = _path(name)
    table = _read(path)
    table[k] = value
    if len(table) > MAX_ENTRIES:
        table = dict(list(table.items())[-MAX_ENTRIES:])
    try:
        paths.private_dir(path.parent)
        paths.write_private(path, json.dumps(table))
    except OSError:
        pass


def _path(name: str):
    return paths.state_dir() / "cache" / f"memo-{name}.json"


def _read(path) -> dict:
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
        return table if isinstance(table, dict) else {}
    except (OSError, ValueError):
        return {}


def of_program(exe: str, argv: list[str], compute):
    """compute() — an answer that depends only on the installed program `exe` and argv (its version
    line) — memoized on the program file's identity (path, size, mtime, inode): doctor asks each tool
    its version on every call, ~10-20 ms a process. A program replaced or upgraded is a new key."""
    try:
        st = os.stat(exe)
    except OSError:
        return compute()
    k = key(os.path.realpath(exe), *argv, str(st.st_size), str(st.st_mtime_ns), str(st.st_ino))
    found = get("programs", k)
    if found is not None:
        return found["answer"]
    answer = compute()
    if answer is not None:
        put("programs", k, {"answer": answer})
    return answer
