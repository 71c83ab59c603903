"""The package's TOML data (rules, budgets, filters) parsed once per content, kept marshal'd in the
state dir's cache: a cold `ctx run` reads three files and tomllib (import and parse) was ~6 ms of it.

Not responsible for what the files mean, nor for reporting bad TOML (tomllib's own errors propagate).
Invariant: loads(data) == tomllib.loads(data.decode("utf-8")) for every data; any cache trouble
(absent, unwritable, damaged, a value marshal cannot hold) just parses the bytes; the cache holds
at most MAX_ENTRIES entries (each edit of a project filter is new content), the newest.
"""

from __future__ import annotations

import marshal
import os
import tomllib

from blake3 import blake3

from capsule.ground import paths

MAX_ENTRIES = 64


def loads(data: bytes) -> dict:
    path = None
    try:
        path = paths.state_dir() / "cache" / f"toml-{blake3(data).hexdigest()[:32]}.marshal"
        with open(path, "rb") as f:
            doc = marshal.load(f)
        if isinstance(doc, dict):
            return doc
    except Exception:  # noqa: BLE001 - a cache miss of any kind: parse
        pass
    doc = tomllib.loads(data.decode("utf-8"))
    if path is not None:
        try:
            blob = marshal.dumps(doc)       # ValueError for a TOML date: such a file is parsed each time
            paths.private_dir(path.parent)
            paths.write_private(path, blob)
            _prune(path.parent)
        except Exception:  # noqa: BLE001 - a cache we cannot write only costs time
            pass
    return doc


def _prune(cache) -> None:
    """Past MAX_ENTRIES, the oldest entries go (on a miss only: a hit costs no listing)."""
    entries = list(cache.glob("toml-*.marshal"))
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:len(entries) - MAX_ENTRIES]:
        try:
            old.unlink()
        except OSError:
            pass
