"""Frecency and the corpus signature, kept in lmdb beside a workspace's index.

Responsible for two small keyed stores: how often and how recently each file was read (a search
boost), and each indexed file's (mtime, size, hash) so a refresh touches only what changed.
Not responsible for search or for deciding what to index. Invariant: both are rebuildable
caches; losing them costs a rebuild, never a wrong answer.
"""

from __future__ import annotations

import math
import struct
import time
from pathlib import Path

import lmdb

HALF_LIFE_S = 7 * 24 * 3600.0
BOOST = 0.35
_FREC = struct.Struct("<Id")      # count, last use (epoch seconds)
_SIG = struct.Struct("<qq16s")    # mtime_ns, size, blake3 digest prefix


class Meta:
    def __init__(self, directory: Path, readonly: bool = False):
        directory.mkdir(parents=True, exist_ok=True)
        self.env = lmdb.open(str(directory / "meta.lmdb"), map_size=1 << 30, max_dbs=4, subdir=True,
                             readonly=False, lock=True, metasync=False, sync=False)
        self.frec = self.env.open_db(b"frecency")
        self.sig = self.env.open_db(b"signature")

    def close(self) -> None:
        self.env.close()

    # -- frecency ----------------------------------------------------------------------------------
    def touch(self, path: str, now: float | None = None) -> None:
        key = path.encode("utf-8", "surrogateescape")
        with self.env.begin(write=True, db=self.frec) as txn:
            raw = txn.get(key)
            count = _FREC.unpack(raw)[0] if raw else 0
            txn.put(key, _FREC.pack(min(count + 1, 2**31), now if now is not None else time.time()))

    def frecency(self, path: str, now: float | None = None) -> float:
        with self.env.begin(db=self.frec) as txn:
            raw = txn.get(path.encode("utf-8", "surrogateescape"))
        if not raw:
            return 0.0
        count, last = _FREC.unpack(raw)
        age = max(0.0, (now if now is not None else time.time()) - last)
        return math.log1p(count) * 0.5 ** (age / HALF_LIFE_S)

    def boost(self, path: str, now: float | None = None) -> float:
        """Multiplier for a search score: 1.0 for never-read files, more for often/recently read."""
        return 1.0 + BOOST * self.frecency(path, now)

    # -- corpus signature --------------------------------------------------------------------------
    def signatures(self) -> dict[str, tuple[int, int, bytes]]:
        with self.env.begin(db=self.sig) as txn:
            return {k.decode("utf-8", "surrogateescape"): _SIG.unpack(v) for k, v in txn.cursor()}

    def update_signatures(self, put: dict[str, tuple[int, int, bytes]], delete: list[str]) -> None:
        with self.env.begin(write=True, db=self.sig) as txn:
            for path in delete:
                txn.delete(path.encode("utf-8", "surrogateescape"))
            for path, (mtime, size, digest) in put.items():
                txn.put(path.encode("utf-8", "surrogateescape"), _SIG.pack(mtime, size, digest))
        self.env.sync(True)

    def clear_signatures(self) -> None:
        with self.env.begin(write=True) as txn:
            txn.drop(self.sig, delete=False)
