"""The proxy's memory of what it sent: each tool result's rewrite, keyed by conversation and content,
its SQL and the redaction of what it stores (the proxy door reaches it through engine_api.py).

Not responsible for deciding a rewrite (the engine does) or for HTTP. Persists in proxy.db in the
state dir, so a proxy restart sends the same bytes. Invariant (INV-1): once a key has a value it
never changes; when two requests race on a new block, the first stored value is what both send.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from pathlib import Path

from blake3 import blake3

from capsule.store import redact
from capsule.store import sqlite

SCHEMA = """
CREATE TABLE IF NOT EXISTS memo(
  key TEXT PRIMARY KEY,        -- blake3(api, conversation, call id, original text)
  conversation TEXT NOT NULL,
  output TEXT,                 -- NULL: the block is sent as it came
  ts REAL NOT NULL
);
"""
LRU_SIZE = 4096     # blocks kept in memory, keyed by their text itself: a hit costs a dict lookup, no hash
LRU_CHARS = 64 << 20   # ... and at most this many characters of them (a few huge results must not pin GBs)


def key(api: str, conversation: str, call_id: str, text: str) -> str:
    h = blake3(_utf8(f"{api}\0{conversation}\0{call_id}\0"))
    h.update(_utf8(text))
    return h.hexdigest()[:32]


def _size(k: tuple[str, str, str, str], value: str | None) -> int:
    return len(k[3]) + len(value or "")


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")          # the fast path; "surrogatepass" alone is ~10x slower
    except UnicodeEncodeError:               # a lone surrogate from the client's JSON
        return text.encode("utf-8", "surrogatepass")


# A secret of the original kept in a stored rewrite is stored as a reference to it (its number
# among the secrets found in the original), filled back in from the original on the way out: the
# database holds no secret, and the agent gets the very bytes it got the first time.
_REF = re.compile("\x00capsule-secret:([0-9]+)\x00")
_UNSEALABLE = object()


def _seal(text: str, output: str | None) -> str | None:
    if output is None or not redact.enabled():
        return output
    secrets = sorted({text[a:b] for a, b, _ in redact.find(text)}, key=lambda s: (-len(s), s))
    for i, secret in enumerate(secrets):
        output = output.replace(secret, f"\x00capsule-secret:{i}\x00")
    for a, b, kind in reversed(redact.find(output)):     # what else looks like one (a cut secret): a marker
        if "\x00" not in output[a:b]:
            output = output[:a] + redact.MARKER.format(kind=kind) + output[b:]
    return output


def _unseal(text: str, stored):
    if stored is None or "\x00capsule-secret:" not in stored:
        return stored
    secrets = sorted({text[a:b] for a, b, _ in redact.find(text)}, key=lambda s: (-len(s), s))
    try:
        return _REF.sub(lambda m: secrets[int(m.group(1))], stored)
    except IndexError:      # a detector that finds other secrets now: the bytes cannot be re-derived
        return _UNSEALABLE


class Memo:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._conn = sqlite.connect(self.path)
        self._conn.execute(SCHEMA)
        self._lru: OrderedDict[tuple[str, str, str, str], str | None] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    MISSING = object()

    def get(self, api: str, conversation: str, call_id: str, text: str):
        """The stored output (None = unchanged), or Memo.MISSING (no row for this block yet)."""
        ident = (api, conversation, call_id, text)
        with self._lock:
            if ident in self._lru:
                self._lru.move_to_end(ident)
                self.hits += 1
                return self._lru[ident]
            rows = self._conn.execute("SELECT output FROM memo WHERE key=?",
                                      (key(api, conversation, call_id, text),)).fetchall()
            if rows and (value := _unseal(text, rows[0][0])) is not _UNSEALABLE:
                self.hits += 1
                self._remember(ident, value)
                return value
            self.misses += 1
            return self.MISSING

    def put(self, api: str, conversation: str, call_id: str, text: str, output: str | None) -> str | None:
        """Store unless present; returns the value that is stored (the first writer's)."""
        k = key(api, conversation, call_id, text)
        with self._lock:
            with sqlite.write(self._conn):
                self._conn.execute("INSERT OR IGNORE INTO memo(key, conversation, output, ts) VALUES(?,?,?,?)",
                                   (k, conversation, _seal(text, output), time.time()))
                stored = _unseal(text, self._conn.execute("SELECT output FROM memo WHERE key=?", (k,)).fetchall()[0][0])
            if stored is _UNSEALABLE:       # another capsule's row this one cannot re-derive: ours goes out
                stored = output
            self._remember((api, conversation, call_id, text), stored)
            return stored

    def _remember(self, k: tuple[str, str, str, str], value: str | None) -> None:
        if k in self._lru:
            self._lru.move_to_end(k)
            return
        self._lru[k] = value
        self._chars += _size(k, value)
        while self._lru and (len(self._lru) > LRU_SIZE or self._chars > LRU_CHARS):
            old, old_value = self._lru.popitem(last=False)
            self._chars -= _size(old, old_value)

    def count(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT count(*) FROM memo").fetchall()[0][0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
