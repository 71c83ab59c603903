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


_ENVS: dict[str, list] = {}       # lmdb allows one open environment per path per process: share it


class Meta:
    def __init__(self, directory: Path):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._key = str((directory / "meta.lmdb").resolve())
        shared = _ENVS.get(self._key)
        if shared is None:
            env = lmdb.open(self._key, map_size=1 << 30, max_dbs=4, subdir=True, lock=True,
                            metasync=False, sync=False, mode=0o700)   # its files get mode & 0o666: owner-only
            shared = _ENVS[self._key] = [env, 0]
        shared[1] += 1
        self.env = shared[0]
        self.frec = self.env.open_db(b"frecency")
        self.sig = self.env.open_db(b"signature")
        self._open = True

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        shared = _ENVS[self._key]
        shared[1] -= 1
        if shared[1] == 0:
            del _ENVS[self._key]
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
