"""Runs of lines that share a template, and the lines that break it (search hits, listings, logs, records).

A line is read as its salience template (rarity.template: numbers, ids, hashes, timestamps, urls
and paths masked; the one masking for every door and family): a number, hash, uuid, address or
timestamp is one free slot; a path's, url's, request target's or id's own words and numbers are
read as words and `<N>` (`/admin/export.csv` breaks 300 `/orders/<N>`, which the masks read alike).
What is this module's own: lines of one shape whose words mostly agree join one template (a word
position where they disagree becomes a word slot, `module <*>.<N>`); within a template, a word that
nearly every member shares but a rare few do not marks those few as outliers.
Not responsible for the masks (rarity.py), nor for what to do with a fold (the caller drops the
members and shows `summary`).
Invariant: deterministic in the order of the lines; a member of a fold is never an outlier, never
`exempt`, and every fold has at least MIN_FOLD members; the fold's sample is its first member.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pathlib import Path

from capsule.ground import tomlcache
from capsule.observe import rarity

_TOKEN = re.compile(r"\d+|[^\W\d_]+|_+|\s+|[^\w\s]")
# Slots read as their words and numbers: a name's words say what its line is about (a listing's
# files, an endpoint, a test id `t::a<N>`); the other masks' values are one slot each.
_SPELLED = ("<path>", "<url>", "<target>", "<id>")
_RANGED = ("<ts>", "<date>", "<time>")      # slots whose values say what varied as first…last

# by path, not importlib.resources (~6 ms of a cold `ctx run`)
_CFG = tomlcache.loads((Path(__file__).parent / "data" / "templates.toml").read_bytes())["templates"]
MIN_FOLD = int(_CFG["min_fold"])                     # members a fold needs (the sample included)
AGREE = float(_CFG["agree"])                         # share of word positions a member must match
KEEP_CONSTANT = float(_CFG["keep_constant"])         # a template keeps at least this share of its words
DOMINANT = float(_CFG["dominant"])                   # a word this common in a position is the rule there
RARE = float(_CFG["rare"])                           # ... and one this rare breaks it (at most this share)
IDENTIFYING = float(_CFG["identifying"])             # a slot with more distinct values than this share names its lines
MAX_CANDIDATES = int(_CFG["max_candidates"])         # templates one line is compared with (bounded work)
MAX_VALUES_SHOWN = int(_CFG["max_values_shown"])


@dataclass
class Fold:
    members: list[int]                   # indices into the lines given, in order; members[0] is the sample
    template: str                        # the line with its slots as <N> (numbers) and <*> (words)
    ranges: list[str] = field(default_factory=list)   # per slot: what varied ("1…50", "a, b, c (+3)")
    beyond: list[bool] = field(default_factory=list)  # per range: its values go beyond the first and last member's

    def summary(self, noun: str = "lines", where: str = "") -> str:
        what = f"; {'; '.join(self.ranges)}" if self.ranges else ""
        return f"(+{len(self.members) - 1} more {noun} of the template '{self.template}'{where}{what})"


def _split(line: str, tpl: str) -> tuple[tuple[str, ...], list[str], list[str | None]]:
    """(shape, words, slot): the shape is the non-word tokens with a placeholder per word or slot;
    a word's slot is None, a masked value's is its mask (`<n>`, `<ts>`, ...). A line that does not
    read back as its template (fail open) is all words: it joins only lines equal to it."""
    body = line.strip()
    values = rarity.slot_values(tpl, body)
    pieces, slots = (rarity.SLOT.split(tpl), rarity.SLOT.findall(tpl)) if values is not None else ([body], [])
    shape: list[str] = []
    words: list[str] = []
    slot: list[str | None] = []

    def spell(text: str, numbers: bool) -> None:
        for tok in _TOKEN.findall(text):
            if tok[0].isalnum():
                kind = "<n>" if numbers and tok[0].isdigit() else None
                shape.append("\0" + (kind or ""))
                words.append(tok)
                slot.append(kind)
            else:
                shape.append(tok)

    spell(line[:len(line) - len(line.lstrip())], False)
    for k, piece in enumerate(pieces):
        spell(piece, False)
        if k < len(slots):
            if slots[k] in _SPELLED:
                spell(values[k], True)
            else:
                shape.append("\0" + slots[k])
                words.append(values[k])
                slot.append(slots[k])
    spell(line[len(line.rstrip()):], False)
    return tuple(shape), words, slot


@dataclass
class _Cluster:
    shape: tuple[str, ...]
    template: list[str | None]           # a word, or None for a slot
    slot: list[str | None]               # per word position: None (a word) or the mask of a slot
    members: list[int] = field(default_factory=list)


def _agreement(tpl: list[str | None], slot: list[str | None], words: list[str]) -> float:
    """Share of the word positions where the line has the template's own word (a slot is no
    agreement: joining on slots would let a template drift one word at a time)."""
    wordpos = [k for k, n in enumerate(slot) if not n]
    if not wordpos:
        return 1.0
    return sum(1 for k in wordpos if tpl[k] is not None and tpl[k] == words[k]) / len(wordpos)


def cluster(lines: list[str], exempt: set[int] = frozenset(), min_fold: int = MIN_FOLD) -> tuple[list[Fold], set[int]]:
    """(folds, outliers): folds of at least MIN_FOLD lines that share a template; outliers are the
    lines a fold's rule marks as breaking it. Lines in `exempt` join nothing."""
    buckets: dict[tuple[str, ...], list[_Cluster]] = {}
    split: list[tuple[list[str], list[str | None]] | None] = []
    tpls = rarity.templates(lines)
    for i, line in enumerate(lines):
        if i in exempt or not line.strip():
            split.append(None)
            continue
        shape, words, slot = _split(line, tpls[i])
        split.append((words, slot))
        found = None
        for c in buckets.get(shape, [])[-MAX_CANDIDATES:]:
            if _agreement(c.template, c.slot, words) >= AGREE:
                merged = [t if t == w and not n else None for t, w, n in zip(c.template, words, slot)]
                wordpos = sum(1 for n in slot if not n)
                constant = sum(1 for t, n in zip(merged, slot) if t is not None and not n)
                if wordpos and constant < KEEP_CONSTANT * wordpos:
                    continue
                c.template = merged
                found = c
                break
        if found is None:
            found = _Cluster(shape, [None if n else w for w, n in zip(words, slot)], slot)
            buckets.setdefault(shape, []).append(found)
        found.members.append(i)
    folds, outliers = [], set()
    for c in sorted((c for cs in buckets.values() for c in cs), key=lambda c: c.members[0]):
        breakers = _breakers(c, split)
        outliers |= breakers
        members = [m for m in c.members if m not in breakers]
        if len(members) >= min_fold and not _identifying(c, members, split):
            folds.append(_fold(c, members, split))
    return folds, outliers


def _identifying(c: _Cluster, members: list[int], split) -> bool:
    """Does a word slot name each member (nearly every value its own: `def <*>(self)`, a listing's
    file names)? Then the lines are not routine repeats, and no count can stand for them."""
    for k, tpl in enumerate(c.template):
        if tpl is None and not c.slot[k]:
            if len({split[m][0][k] for m in members}) > IDENTIFYING * len(members):
                return True
    return False


def _breakers(c: _Cluster, split) -> set[int]:
    """Members whose word, in a position where nearly every member has the same word, is a rare other one."""
    n = len(c.members)
    if n < MIN_FOLD:
        return set()
    out: set[int] = set()
    for k, tpl in enumerate(c.template):
        if tpl is not None or c.slot[k]:
            continue
        counts: dict[str, int] = {}
        for m in c.members:
            w = split[m][0][k]
            counts[w] = counts.get(w, 0) + 1
        top = max(counts.values())
        if top < DOMINANT * n:
            continue
        rare = {w for w, cnt in counts.items() if cnt <= max(1, RARE * n) and cnt < top}
        out |= {m for m in c.members if split[m][0][k] in rare}
    return out


def _fold(c: _Cluster, members: list[int], split) -> Fold:
    first_words = split[members[0]][0]
    parts, ranges, beyond, wi = [], [], [], 0
    for tok in c.shape:
        if not tok.startswith("\0"):
            parts.append(tok)
            continue
        values = [split[m][0][wi] for m in members]
        kind = c.slot[wi]
        if len(set(values)) == 1:
            parts.append(first_words[wi])
        elif kind == "<n>" or kind in _RANGED:
            name = "<N>" if kind == "<n>" else kind
            parts.append(name)
            ordered = sorted(set(values), key=_number if kind == "<n>" else None)
            ranges.append(f"{name} {ordered[0]}…{ordered[-1]}")
            beyond.append(not {ordered[0], ordered[-1]} <= {values[0], values[-1]})
        else:
            name = kind or "<*>"
            parts.append(name)
            distinct = sorted(set(values))
            more = f" (+{len(distinct) - MAX_VALUES_SHOWN})" if len(distinct) > MAX_VALUES_SHOWN else ""
            ranges.append(f"{name} {', '.join(distinct[:MAX_VALUES_SHOWN])}{more}")
            beyond.append(not set(distinct) <= {values[0], values[-1]})
        wi += 1
    return Fold(members, "".join(parts), ranges, beyond)


def _number(value: str) -> tuple[float, str]:
    try:        # (a slot read back as any text, where its own mask did not read it, sorts last)
        return float(value), value
    except ValueError:
        return float("inf"), value


def describe(values: list[str]) -> str | None:
    """The one template all `values` share, with what varied, or None."""
    folds, outliers = cluster(values, min_fold=2)
    if len(folds) == 1 and len(folds[0].members) == len(values) and not outliers:
        f = folds[0]
        return f"'{f.template}'" + (f" ({'; '.join(f.ranges)})" if f.ranges else "")
    return None
