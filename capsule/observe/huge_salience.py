"""The salience model for a spool too large to hold (observe/huge.py): which lines of it are rare,
found in bounded streaming passes instead of a head/tail guess.

Pass 1 (count) masks each line's first KEY_BYTES (numbers and hex ids; a number of 7 digits and
more apart, so a value far above its column's becomes a template of its own: keys_of) and counts the templates in a table of at most TABLE_CAP; each template's first line is
remembered. A template seen once in a repetitive spool is salient (anomalies.py's rule for rare
templates), and so is a template whose level ranks above the dominant one (anomalies' levels).
Pass 2 (find) locates every line of a salient template seen more than once; fetch() reads lines
by number. Not responsible for error-word windows, head/tail lines or rendering (huge.py).
Invariant: memory bounded by CHUNK, KEY_BYTES · TABLE_CAP and the caps, whatever the spool holds;
deterministic; line numbers are 0-based.
"""

from __future__ import annotations

from collections import Counter
from io import BufferedIOBase

from capsule.observe import anomalies

CHUNK = 1 << 20
KEY_BYTES = 160          # bytes of a line its template is made from
TABLE_CAP = 20_000       # distinct templates counted at most (more: the spool is not repetitive)
SALIENT_CAP = 120        # salient lines shown at most
RARE_MIN = 8             # singletons that still count as rare in a small spool (anomalies' share above it)
FIRSTS_CAP = 24          # first lines of the commonest templates shown (what the folded runs hold)

# A template in bytes, by translations and replacements only (C speed over a whole chunk; a regex
# substitution is 20-40x slower): digits and a-f (hex ids, hashes) read as `0`, a run of 7 and more
# as one `\x01` (a value far above a column of small numbers makes a template of its own), shorter
# runs as one `0`. Words holding a-f letters are read alike in every line, so they still tell apart.
_ZERO = bytes.maketrans(b"123456789abcdef", b"0" * 15)
_BIG = b"0" * 7


class Templates:
    """Pass 1's result: template counts, each template's first line, the line count."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.first: dict[bytes, int] = {}
        self.lines = 0
        self.overflow = False

    def add(self, keys: list[bytes], base: int) -> None:
        if self.overflow:
            return
        self.counts.update(keys)
        new = [k for k in dict.fromkeys(keys) if k not in self.first]
        if new:
            at = {}
            for j in range(len(keys) - 1, -1, -1):    # each new key's first index in this batch
                at[keys[j]] = j
            for k in new:
                self.first[k] = base + at[k]
        if len(self.counts) > TABLE_CAP:
            self.overflow = True
            self.counts.clear()
            self.first.clear()

    def salient(self) -> tuple[set[bytes], list[int]]:
        """(the salient templates, first lines of the commonest folded templates)."""
        if self.overflow or not self.counts:
            return set(), []
        nonblank = self.lines - self.counts.get(b"", 0)
        keep: set[bytes] = set()
        frequent = sum(c for k, c in self.counts.items() if c >= 3 and k)
        singles = [k for k, c in self.counts.items() if c == 1 and k]
        if (nonblank >= anomalies.MIN_REPETITIVE_LINES and frequent >= anomalies.REPETITIVE * nonblank
                and len(singles) <= max(RARE_MIN, anomalies.RARE_SHARE * nonblank)):
            keep.update(singles)
        ranks = {k: anomalies.level_rank(k[:120].decode("latin-1")) for k in self.counts}
        per_rank: Counter = Counter()
        for k, r in ranks.items():
            if r is not None:
                per_rank[r] += self.counts[k]
        if sum(per_rank.values()) >= anomalies.MIN_GROUP:
            dominant = per_rank.most_common(1)[0][0]
            above = [k for k, r in ranks.items() if r is not None and r > dominant]
            if anomalies.is_rare(sum(self.counts[k] for k in above), sum(per_rank.values())):
                keep.update(above)
        firsts = [self.first[k] for k, c in self.counts.most_common(FIRSTS_CAP) if c >= 3 and k]
        return keep, sorted(firsts)


def keys_of(parts: list[bytes]) -> list[bytes]:
    """The templates of complete lines (each line's first KEY_BYTES, masked)."""
    if parts and max(map(len, parts)) > KEY_BYTES:
        parts = [p[:KEY_BYTES] for p in parts]
    t = b"\n".join(parts).translate(_ZERO).replace(_BIG, b"\x01")
    for run in (b"\x01\x01", b"\x010", b"00"):
        while run in t:
            t = t.replace(run, run[:1])
    return t.split(b"\n")


def _lines(f: BufferedIOBase):
    """(base, complete lines) per chunk, a line's text capped to KEY_BYTES; the last line without
    a newline comes last."""
    f.seek(0)
    base, partial = 0, b""
    while chunk := f.read(CHUNK):
        parts = chunk.split(b"\n")
        if len(parts) == 1:        # no newline: the open line goes on
            partial = (partial + chunk[:KEY_BYTES])[:KEY_BYTES]
            continue
        parts[0] = (partial + parts[0])[:KEY_BYTES]
        partial = parts.pop()[:KEY_BYTES]
        yield base, parts
        base += len(parts)
    if partial:
        yield base, [partial]


def count(f: BufferedIOBase) -> Templates:
    t = Templates()
    for base, parts in _lines(f):
        t.add(keys_of(parts), base)
        t.lines = base + len(parts)
    return t


def find(f: BufferedIOBase, wanted: set[bytes], cap: int = SALIENT_CAP) -> list[int]:
    """Line numbers of the lines whose template is in `wanted`, the first `cap` of them."""
    out: list[int] = []
    if not wanted:
        return out
    for base, parts in _lines(f):
        out += [base + j for j, k in enumerate(keys_of(parts)) if k in wanted]
        if len(out) >= cap:
            return out[:cap]
    return out


def fetch(f: BufferedIOBase, wanted: list[int], cap: int) -> dict[int, tuple[bytes, int]]:
    """{line number: (its first `cap` bytes, its full length)} for the wanted lines."""
    out: dict[int, tuple[bytes, int]] = {}
    want = sorted(set(wanted))
    if not want:
        return out
    f.seek(0)
    line, w = 0, 0
    cur, cur_len = b"", 0          # the open line's first bytes and length so far
    while w < len(want) and (chunk := f.read(CHUNK)):
        nl = chunk.count(b"\n")
        if nl and want[w] > line + nl:      # no wanted line ends or opens in this chunk: count and skip it
            rest = chunk[chunk.rfind(b"\n") + 1:]
            cur, cur_len, line = rest[:cap], len(rest), line + nl
            continue
        parts = chunk.split(b"\n")
        last = len(parts) - 1      # parts[:last] end in this chunk: lines line .. line+last-1
        while w < len(want) and want[w] < line + last:
            j = want[w] - line
            text, n = (cur + parts[0], cur_len + len(parts[0])) if j == 0 else (parts[j], len(parts[j]))
            out[want[w]] = (text[:cap], n)
            w += 1
        if last:
            cur, cur_len = parts[-1][:cap], len(parts[-1])
        else:
            cur, cur_len = (cur + parts[0])[:cap], cur_len + len(parts[0])
        line += last
    if w < len(want) and want[w] == line and cur_len:
        out[line] = (cur, cur_len)
    return out
