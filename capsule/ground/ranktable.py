"""Exact cl100k counts for a short-lived process without building the whole tokenizer.

Not responsible for which counter is used (tokens.py decides) nor for the rank data itself
(tiktoken's). Building tiktoken's BPE from its 100k ranks costs ~85 ms of CPU, most of a cold
`capsule ctx run`; this module keeps the ranks in a memory-mapped hash table in the state dir's
cache and builds the same BPE (same pattern, same special tokens) from only the ranks a text can
use: tiktoken splits the text into pieces and only ever looks up contiguous byte strings of one
piece, so any rank table holding every rank whose key occurs inside a piece counts exactly alike.
Searching a text's segments for their ranks is most of a cold count, so the segments searched and
the ranks found are kept next to the table (`.learned`) for the next process.
Invariant: Subset.count(text) == the full encoder's count, for every text (tests/measure/test_ranktable.py).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import marshal
import mmap
import os
import re
import struct
import sys
import zlib
from array import array
from itertools import accumulate

MAGIC = b"CRT2"           # CRT1 had a JSON header: json is ~2 ms of a cold `ctx run` that needs nothing else of it
PREFIX_ONLY = -1          # a table entry that is a proper prefix of some key, not a key itself
LEARNED_MAGIC = b"CRL1"
# Ranks kept for the next processes (Subset.save_learned): a BPE builds from 4,000 in ~3 ms, from
# 20,000 in ~7 ms; past this many, a process keeps only what it found itself.
LEARNED_MAX_RANKS = 8000

# Positions no piece of cl100k's pre-tokenizer can straddle, from the pattern's alternatives
# ('s-contractions, [^\r\n\pL\pN]?\pL+, \pN{1,3}, ' ?[^\s\pL\pN]+[\r\n]*', whitespace runs), judged
# on ASCII bytes only (the Unicode tables of the two regex engines can never disagree there):
# a letter then a non-letter (letter pieces end in letters); a digit next to a non-digit (digit
# pieces hold digits only); a newline then a printable character (a newline only ends a piece or
# sits in a whitespace run); punctuation then a space or tab (punctuation pieces continue only
# with punctuation, newlines or letters). Splitting there lets repeated segments be looked at once.
_BOUNDARY = re.compile(
    rb"(?<=[A-Za-z])(?=[\x00-\x40\x5b-\x60\x7b-\x7f])"
    rb"|(?<=[0-9])(?=[\x00-\x2f\x3a-\x7f])|(?<=[\x00-\x2f\x3a-\x7f])(?=[0-9])"
    rb"|(?<=\n)(?=[!-~])"
    rb"|(?<=[!-/:-@\[-`{-~])(?=[ \t])")


def write(path, ranks: dict[bytes, int], pat_str: str, special: dict[str, int]) -> None:
    """The table file: a marshal'd header; open-addressing slots (crc32, linear probing) holding entry
    number + 1 (0 is empty); each entry's rank (or PREFIX_ONLY) and key offset; the keys."""
    keys = list(ranks)
    keys += {k[:i] for k in keys for i in range(1, len(k))} - ranks.keys()    # for the walk to stop early
    values = array("i", [ranks.get(k, PREFIX_ONLY) for k in keys])
    offsets = array("I", accumulate(map(len, keys), initial=0))
    size = 1 << (2 * len(keys) - 1).bit_length()
    mask = size - 1
    slots = array("I", bytes(4 * size))
    for n, h in enumerate(map(zlib.crc32, keys), 1):
        i = h & mask
        while slots[i]:
            i = (i + 1) & mask
        slots[i] = n
    header = marshal.dumps({"pat_str": pat_str, "special": dict(special), "size": size, "entries": len(keys),
                            "single": {str(b): ranks[bytes([b])] for b in range(256)}})
    header += b" " * (-(len(MAGIC) + 4 + len(header)) % 8)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600), "wb") as f:   # owner-only
            f.write(MAGIC + struct.pack("<I", len(header)) + header)
            for part in (slots, values, offsets):
                f.write(part.tobytes())
            f.write(b"".join(keys))
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)                       # a full volume keeps no half-written table
        raise


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class Subset:
    """A BPE over the ranks the texts seen so far can use; grows (and is rebuilt) as needed."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self._mm[:4] != MAGIC:
            raise ValueError(f"{path}: not a rank table")
        hlen = struct.unpack_from("<I", self._mm, 4)[0]
        head = marshal.loads(self._mm[8:8 + hlen])
        self.pat_str, self.special = head["pat_str"], head["special"]
        size, entries = head["size"], head["entries"]
        view = memoryview(self._mm)
        at = 8 + hlen
        self._mask = size - 1
        self._slots = view[at:at + 4 * size].cast("I")
        at += 4 * size
        self._values = view[at:at + 4 * entries].cast("i")
        at += 4 * entries
        self._offsets = view[at:at + 4 * (entries + 1)].cast("I")
        self._keys = at + 4 * (entries + 1)
        if len(self._mm) != self._keys + self._offsets[entries]:
            raise ValueError(f"{path}: truncated or damaged rank table")
        self.ranks = {bytes([int(b)]): r for b, r in head["single"].items()}
        self._seen: set[bytes] = set()
        self.looked_at = 0       # bytes of distinct segments searched so far
        self._memo: dict = {}    # byte string -> rank, PREFIX_ONLY or None, as found
        self._bpe = None
        self._learned_path = f"{os.fspath(path)}.learned"
        self._searched: set[bytes] = set()     # segments this process searched itself ...
        self._found: dict[bytes, int] = {}     # ... and the ranks it found in them
        self._load_learned()

    def _load_learned(self) -> None:
        """The segments earlier processes searched and the ranks they found there (save_learned):
        a repeated command's words, paths and numbers are not searched again. A damaged file (its
        checksum) or one of another shape is ignored."""
        try:
            with open(self._learned_path, "rb") as f:
                blob = f.read()
            if blob[:4] != LEARNED_MAGIC or struct.unpack_from("<I", blob, 4)[0] != zlib.crc32(memoryview(blob)[8:]):
                return
            ranks, seen = marshal.loads(blob[8:])
        except (OSError, ValueError, EOFError, TypeError, struct.error):
            return
        if type(ranks) is dict and type(seen) is list:
            self.ranks.update(ranks)
            self._seen.update(seen)

    def save_learned(self) -> None:
        """Keep what this process searched for the next ones (ctx run's finisher calls it, off the
        agent's path): with what the file held, or, once that would pass LEARNED_MAX_RANKS, this
        process's own alone. Written to a temp file and renamed; a cache that cannot be written
        only costs time."""
        if not self._searched:
            return
        if len(self.ranks) - 256 <= LEARNED_MAX_RANKS:      # single bytes come from the table's header
            ranks = {k: r for k, r in self.ranks.items() if len(k) > 1}
            seen = list(self._seen)
        else:
            ranks, seen = self._found, list(self._searched)
        body = marshal.dumps((ranks, seen))
        tmp = f"{self._learned_path}.{os.getpid()}.tmp"
        try:
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600), "wb") as f:
                f.write(LEARNED_MAGIC + struct.pack("<I", zlib.crc32(body)) + body)
            os.replace(tmp, self._learned_path)
        except OSError:
            _unlink(tmp)

    def _find(self, key: bytes):
        """The rank of key, PREFIX_ONLY, or None when no key starts with it."""
        mm, slots, mask, offsets, base = self._mm, self._slots, self._mask, self._offsets, self._keys
        i = zlib.crc32(key) & mask
        while n := slots[i]:
            a, b = offsets[n - 1], offsets[n]
            if b - a == len(key) and mm[base + a:base + b] == key:
                return self._values[n - 1]
            i = (i + 1) & mask
        return None

    def add(self, data: bytes, budget: int | None = None) -> bool:
        """Every rank whose key occurs inside a segment of data (a superset of what its pieces use).
        False (nothing added) when searching its new segments would take looked_at past budget."""
        find, ranks, seen, memo = self._find, self.ranks, self._seen, self._memo
        before = len(ranks)
        new = set(_BOUNDARY.split(data)) - seen
        work = sum(map(len, new))
        if budget is not None and self.looked_at + work > budget:
            return False
        self.looked_at += work
        found = self._found
        self._searched |= new
        for seg in new:
            seen.add(seg)
            n = len(seg)
            for i in range(n - 1):
                for j in range(i + 2, min(n, i + 128) + 1):     # single bytes are always ranks
                    key = seg[i:j]
                    r = memo.get(key, memo)      # runs (`+++++`, indents) and words repeat
                    if r is memo:
                        r = memo[key] = find(key)
                        if r is not None and r != PREFIX_ONLY:
                            ranks[key] = found[key] = r
                    if r is None:
                        break
        if len(ranks) != before or self._bpe is None:
            self._bpe = core_bpe_module().CoreBPE(ranks, self.special, self.pat_str)
        return True

    def count(self, clean: str, budget: int | None = None) -> int | None:
        """Tokens of a text already made valid UTF-8 (tokens.count does that); None past budget."""
        if not self.add(clean.encode("utf-8"), budget):
            return None
        return len(memoryview(self._bpe.encode_to_tiktoken_buffer(clean, set()))) // 4


def extension_path() -> str | None:
    """tiktoken's compiled module (its BPE), found without running the package's __init__."""
    spec = importlib.util.find_spec("tiktoken")
    for d in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(d, "_tiktoken" + suffix)
            if os.path.exists(path):
                return path
    return None


def core_bpe_module():
    """tiktoken's compiled module, loaded alone: the package's public API imports ~15 ms of modules
    (thread pools, the model registry) a count never uses. It is registered under its own name,
    so a later `import tiktoken` takes this very module (a PyO3 module initialises once a process)."""
    mod = sys.modules.get("tiktoken._tiktoken")
    if mod is not None:
        return mod
    path = extension_path()
    if path is None:
        from tiktoken import _tiktoken

        return _tiktoken
    loader = importlib.machinery.ExtensionFileLoader("tiktoken._tiktoken", path)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_file_location("tiktoken._tiktoken", path,
                                                                               loader=loader))
    sys.modules["tiktoken._tiktoken"] = mod
    loader.exec_module(mod)
    return mod
