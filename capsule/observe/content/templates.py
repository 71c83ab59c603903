"""Runs of lines that share a template, and the lines that break it (search hits, listings, logs, records).

A line's template is its shape — the sequence of punctuation and spacing between its words — and
its words; numbers are always free slots. Lines of one shape whose words mostly agree join one
template (a word position where they disagree becomes a slot); within a template, a word that
nearly every member shares but a rare few do not marks those few as outliers. Not responsible for
what to do with a fold (the caller drops the members and shows `summary`).
Invariant: deterministic in the order of the lines; a member of a fold is never an outlier, never
`exempt`, and every fold has at least MIN_FOLD members; the fold's sample is its first member.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pathlib import Path

from capsule.ground import tomlcache

_TOKEN = re.compile(r"\d+|[^\W\d_]+|_+|\s+|[^\w\s]")

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


def _split(line: str) -> tuple[tuple[str, ...], list[str], list[bool]]:
    """(shape, words, is_number): the shape is the non-word tokens with a placeholder per word."""
    shape, words, numeric = [], [], []
    for tok in _TOKEN.findall(line):
        if tok[0].isdigit():
            shape.append("\0")
            words.append(tok)
            numeric.append(True)
        elif tok[0].isalnum():
            shape.append("\0")
            words.append(tok)
            numeric.append(False)
        else:
            shape.append(tok)
    return tuple(shape), words, numeric


@dataclass
class _Cluster:
    shape: tuple[str, ...]
    template: list[str | None]           # a word, or None for a slot
    numeric: list[bool]
    members: list[int] = field(default_factory=list)


def _agreement(tpl: list[str | None], numeric: list[bool], words: list[str]) -> float:
    """Share of the word positions where the line has the template's own word (a slot is no
    agreement: joining on slots would let a template drift one word at a time)."""
    wordpos = [k for k, n in enumerate(numeric) if not n]
    if not wordpos:
        return 1.0
    return sum(1 for k in wordpos if tpl[k] is not None and tpl[k] == words[k]) / len(wordpos)


def cluster(lines: list[str], exempt: set[int] = frozenset(), min_fold: int = MIN_FOLD) -> tuple[list[Fold], set[int]]:
    """(folds, outliers): folds of at least MIN_FOLD lines that share a template; outliers are the
    lines a fold's rule marks as breaking it. Lines in `exempt` join nothing."""
    buckets: dict[tuple[str, ...], list[_Cluster]] = {}
    split: list[tuple[list[str], list[bool]] | None] = []
    for i, line in enumerate(lines):
        if i in exempt or not line.strip():
            split.append(None)
            continue
        shape, words, numeric = _split(line)
        split.append((words, numeric))
        found = None
        for c in buckets.get(shape, [])[-MAX_CANDIDATES:]:
            if _agreement(c.template, c.numeric, words) >= AGREE:
                merged = [t if t == w and not n else None for t, w, n in zip(c.template, words, numeric)]
                wordpos = sum(1 for n in numeric if not n)
                constant = sum(1 for t, n in zip(merged, numeric) if t is not None and not n)
                if wordpos and constant < KEEP_CONSTANT * wordpos:
                    continue
                c.template = merged
                found = c
                break
        if found is None:
            found = _Cluster(shape, [None if n else w for w, n in zip(words, numeric)], numeric)
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
        if tpl is None and not c.numeric[k]:
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
        if tpl is not None or c.numeric[k]:
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
        if tok != "\0":
            parts.append(tok)
            continue
        values = [split[m][0][wi] for m in members]
        if len(set(values)) == 1:
            parts.append(first_words[wi])
        elif c.numeric[wi] and all(v.isdigit() for v in values):
            parts.append("<N>")
            nums = sorted(set(values), key=lambda v: (int(v), v))
            ranges.append(f"<N> {nums[0]}…{nums[-1]}")
            beyond.append(not {nums[0], nums[-1]} <= {values[0], values[-1]})
        else:
            parts.append("<*>")
            distinct = sorted(set(values))
            more = f" (+{len(distinct) - MAX_VALUES_SHOWN})" if len(distinct) > MAX_VALUES_SHOWN else ""
            ranges.append(f"<*> {', '.join(distinct[:MAX_VALUES_SHOWN])}{more}")
            beyond.append(not set(distinct) <= {values[0], values[-1]})
        wi += 1
    return Fold(members, "".join(parts), ranges, beyond)


def describe(values: list[str]) -> str | None:
    """The one template all `values` share, with what varied, or None."""
    folds, outliers = cluster(values, min_fold=2)
    if len(folds) == 1 and len(folds[0].members) == len(values) and not outliers:
        f = folds[0]
        return f"'{f.template}'" + (f" ({'; '.join(f.ranges)})" if f.ranges else "")
    return None
