"""Log anomalies, judged on the whole text: a rare value in a low-cardinality field of records
of one shape (a 404 among 2xx, `exit status 1` among 0s), a numeric outlier, a level above the
dominant one, and in a run that exits non-zero, rare templates (a line unlike the thousands
around it; a variant of a frequent pattern such as pytest's dot row holding the one `F`).
Not responsible for error blocks or quoted text (keep.py, which asks it and owns the result).
Invariant: deterministic and linear in the lines (tokens per line capped); returns 0-based
indices of the lines given.
"""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from itertools import compress
from operator import le
from statistics import median

from capsule.observe import digits

MAX_TOKENS = 16          # tokens of a line that take part in templates
MIN_GROUP = 20           # lines sharing a template before its fields are judged (any run)
MIN_FIELDS = 4           # a record has several fields; a path, a name or `a from b` is not one
MIN_VARIANT_GROUP = 4    # lines around a one-token variant (failing runs)
DOMINANT = 0.75          # share of a field's commonest value that makes a different value stand out
RARE_SHARE = 0.02        # a value (or template) this rare among its group stands out ...
RARE_MIN = 2             # ... or when seen at most this many times
CATEGORICAL = 16         # a field with at most this many distinct values is categorical
REPETITIVE = 0.90        # share of lines in frequent templates that makes a text repetitive
MIN_REPETITIVE_LINES = 50
OUTLIER_FACTOR = 10.0    # a number this many times the field's median (and far above its spread)

_SHAPE = re.compile(r"[A-Za-z]+|\d+")
_DIGITS = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{7,}\b|\d+")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?(?:\n-?\d+(?:\.\d+)?)*")
# Not message text: stack frames, a compiler's source excerpt (`12 |  code`, `   |  ^~~`) and
# caret lines; the tool's own filter decides about those.
FRAME = re.compile(r"^\s+(?:at\s|File \"|\d+:\s|from\s|in\s|#\d+\s)|^\s+\S+\.\w+:\d+|"
                   r"^\s*[\^~]+[\^~ ]*$|^\s*\d*\s*[|│]|^\S+:\d+: in \S+$")
_LEVEL_WORDS = "TRACE|DEBUG|FINE|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRIT|CRITICAL|ALERT|EMERG|FATAL|SEVERE"
_LEVEL = re.compile(rf"(?<![\w-])({_LEVEL_WORDS})(?![\w-])|^([DIWEF])\d{{4}} ")    # a line's level (the rule)
# _LEVEL in two parts that find the same match faster: the `^X1234 ` form (glog) at the start,
# else the leftmost level word whose previous character is not `[\w-]` (the lookbehind, checked
# after the word is found, so the regex engine can skip to the words' first letters).
_LEVEL_GLOG = re.compile(r"([DIWEF])\d{4} ")
_LEVEL_WORD = re.compile(rf"({_LEVEL_WORDS})(?![\w-])")
_WORDISH = re.compile(r"[\w-]")
_RANK = {"TRACE": 0, "DEBUG": 1, "FINE": 1, "D": 1, "INFO": 2, "I": 2, "NOTICE": 3, "WARN": 4,
         "WARNING": 4, "W": 4, "ERROR": 5, "ERR": 5, "E": 5, "SEVERE": 5, "CRIT": 6, "CRITICAL": 6,
         "F": 6, "ALERT": 7, "EMERG": 7, "FATAL": 7}


def _tokens(line: str) -> list[str]:
    return line.split(None, MAX_TOKENS)[:MAX_TOKENS]


def _kind(m: re.Match) -> str:
    return "a" if m.group(0)[0].isalpha() else "0"


def _shape(line: str) -> tuple[str, ...]:
    """The line's tokens with each run of letters or digits reduced to its kind."""
    return tuple(_tokens(_SHAPE.sub(_kind, line)))


_KINDS = bytes.maketrans((string.ascii_letters + string.digits).encode(), b"a" * 52 + b"0" * 10)


def _shapes(lines: list[str], masked: list[str] | None = None) -> list[tuple[str, ...]]:
    """[_shape(line) for line in lines], worked out once per distinct digit-masked line (`masked`:
    digits.masked(lines); a digit is a digit in both, so a line and its mask have one shape), and
    there once per distinct line of kinds: over the distinct lines joined, as ASCII bytes, each
    letter becomes `a` and each digit `0`, then the runs in the distinct results shrink to one. A
    non-ASCII line gets _shape itself (`\\d` also matches other scripts' digits; a non-ASCII
    character became one `?`)."""
    if not lines:
        return []
    masked = masked if masked is not None else digits.masked(lines)
    if masked is None:        # a line holds a newline
        return [_shape(ln) for ln in lines]
    distinct = list(dict.fromkeys(masked))
    kinds = "\n".join(distinct).encode("ascii", "replace").translate(_KINDS).decode("ascii").split("\n")
    runs = list(dict.fromkeys(kinds))
    short = "\n".join(runs).encode("ascii")
    for run in (b"aa", b"00"):
        while run in short:
            short = short.replace(run, run[:1])
    shape_of = {k: tuple(_tokens(s)) for k, s in zip(runs, short.decode("ascii").split("\n"))}
    of_masked = {m: shape_of[k] if m.isascii() else _shape(m) for m, k in zip(distinct, kinds)}
    return list(map(of_masked.__getitem__, masked))


def _mask(line: str) -> tuple[str, ...]:
    """The line's tokens with numbers and hex ids masked."""
    return tuple(_tokens(_DIGITS.sub("#", line)))


def rare_lines(lines: list[str], masked: list[str] | None = None) -> set[int]:
    """The failing-run rules alone (one-token variants, rare templates in a repetitive text), for
    any run: what anomalies(lines, True) adds to anomalies(lines, False) (observe/rarity.py)."""
    templates = _groups(_masks(lines, masked))
    return _variants(templates, lines) | _rare_templates(templates, sum(1 for ln in lines if ln.strip()))


def _masks(lines: list[str], masked: list[str] | None = None) -> list[tuple[str, ...]]:
    """[() if FRAME.match(ln) else _mask(ln) for ln in lines], once per distinct digit-masked line
    (every digit lies inside a span _mask replaces, and FRAME reads a digit only as `\\d`: a line
    and its mask answer alike)."""
    masked = masked if masked is not None else digits.masked(lines)
    if masked is None:
        masked = lines
    memo: dict[str, tuple[str, ...]] = {}
    for m in dict.fromkeys(masked):
        memo[m] = () if FRAME.match(m) else _mask(m)
    return list(map(memo.__getitem__, masked))


def _groups(keys: list[tuple]) -> dict[tuple, list[int]]:
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        if key:
            groups[key].append(i)
    return groups


def anomalies(lines: list[str], failing: bool, masked: list[str] | None = None) -> set[int]:
    keep: set[int] = set()
    # Records of one shape (words and numbers reduced to their kind): a field that reads
    # differently in a few of them is an anomaly in any run (a 404 among 2xx). A shape has its
    # line's tokens (runs of letters or digits became one letter, whitespace stayed), so a
    # record's width is its key's, and only the lines of a large group are split into fields.
    for key, idx in _groups([s if len(s) >= MIN_FIELDS else () for s in _shapes(lines, masked)]).items():
        if len(idx) >= MIN_GROUP:
            keep |= _field_outliers(idx, _columns(lines, idx, len(key)))
    keep |= _levels(lines, masked)
    if failing:
        # Templates (numbers masked, words kept): in a failing run, the odd one out.
        # Stack frames and source excerpts are the tool filters' business, not anomalies.
        # (A blank line masks to no tokens: no template, and not counted below.)
        templates = _groups(_masks(lines, masked))
        keep |= _variants(templates, lines)
        keep |= _rare_templates(templates, sum(1 for ln in lines if ln.strip()))
    return keep


def _columns(lines: list[str], idx: list[int], width: int) -> list:
    """The first `width` tokens of the lines `idx`, column by column. Lines of one template of
    fewer than MAX_TOKENS tokens have exactly `width` each: their words, read by one split of
    the lines joined, fall into columns by stride (no list per line). str.split's whitespace is
    the per-line split's, and a newline is whitespace."""
    if width < MAX_TOKENS:
        words = "\n".join([lines[i] for i in idx]).split()
        if len(words) == width * len(idx):
            return [words[k::width] for k in range(width)]
    return list(zip(*(_tokens(lines[i]) for i in idx)))[:width]


def field_outliers(idx: list[int], columns: list) -> set[int]:
    """The rule below for a caller's own columns (observe/rarity.py's narrow tables: `du`'s two)."""
    return _field_outliers(idx, columns)


def is_rare(count: int, total: int) -> bool:
    return count <= max(RARE_MIN, RARE_SHARE * total)


def _field_outliers(idx: list[int], columns: list) -> set[int]:
    """In lines of one template (`columns`: their fields, _columns): a rare value of a
    categorical field, or a numeric outlier. Each rule is first asked of the column's distinct
    values (its Counter); the per-line work (numbers, order, statistics) runs only for a column
    where one of the rules can still keep a line."""
    keep: set[int] = set()
    total = len(idx)
    for column in columns:
        head = column[:4 * CATEGORICAL]
        if len(set(head)) > CATEGORICAL and not _numbers(head):
            continue     # neither categorical nor numbers (its first rows show it): nothing below applies
        values = Counter(column)
        if len(values) == 1:
            continue
        numeric = _numbers(values)
        if not numeric and len(values) > CATEGORICAL:
            continue
        dominated = len(values) <= CATEGORICAL and max(values.values()) >= DOMINANT * total
        if not dominated and not (numeric and _may_stand_out(values)):
            continue     # no value is rare under a dominant one, and no number can pass the bar below
        nums = list(map(float, column)) if numeric else None
        if _ordered(nums if numeric else column):
            continue     # a clock or a counter: values that only grow are not anomalies
        if dominated:
            rare = {v for v, c in values.items() if is_rare(c, total)}
            keep |= {i for i, v in zip(idx, column) if v in rare}
        else:
            med = median(nums)
            spread = median([abs(x - med) for x in nums])
            bar = max(OUTLIER_FACTOR * abs(med), med + OUTLIER_FACTOR * spread, 1.0)
            high = [i for i, x in zip(idx, nums) if x > bar]
            if is_rare(len(high), total):
                keep |= set(high)
    return keep


def _may_stand_out(values) -> bool:
    """Whether a number of a column (its distinct values, all numbers) can exceed the outlier bar
    (at least OUTLIER_FACTOR times the median, and 1): the median lies between the smallest and
    the largest value, so when the largest is within OUTLIER_FACTOR times a non-negative smallest
    (or at most 1), none can."""
    nums = list(map(float, values))
    low, high = min(nums), max(nums)
    return not (high <= 1.0 or (low >= 0 and high <= OUTLIER_FACTOR * low))


def _numbers(values) -> bool:
    """Every value is a plain number (_NUMBER): one match over the values joined by newlines
    (a token never holds whitespace)."""
    return not values or _NUMBERS.fullmatch("\n".join(values)) is not None


def _ordered(seq) -> bool:
    return all(map(le, seq, seq[1:]))      # numbers as numbers, anything else as text


def _levels(lines: list[str], masked: list[str] | None = None) -> set[int]:
    """Log lines whose level ranks above the level most lines carry (a line's level: _LEVEL in its
    first 120 characters). Asked once per distinct digit-masked line (digits.masked; the rule sees
    a digit only as `\\d`/`\\w`, so a line and its mask rank alike), the lines counted by those."""
    masked = masked if masked is not None else digits.masked(lines)
    if masked is None:        # a line holds a newline
        masked = lines
    seen = Counter(masked)
    rank = {m: level_rank(m[:120]) for m in seen}
    per_rank: Counter = Counter()     # ranks in the order lines first show them: most_common's tie-break
    for m, n in seen.items():
        if rank[m] is not None:
            per_rank[rank[m]] += n
    ranked = sum(per_rank.values())
    if ranked < MIN_GROUP:
        return set()
    dominant = per_rank.most_common(1)[0][0]
    above = {m for m, r in rank.items() if r is not None and r > dominant}
    if not is_rare(sum(seen[m] for m in above), ranked):
        return set()
    return set(compress(range(len(masked)), map(above.__contains__, masked)))


def level_rank(head: str) -> int | None:
    m = _LEVEL_GLOG.match(head)     # only at the start, where no level word can also match (`E1` is no word)
    if m is None:
        m = _LEVEL_WORD.search(head)
        while m is not None and m.start() and _WORDISH.match(head, m.start() - 1):
            m = _LEVEL_WORD.search(head, m.start() + 1)
    return None if m is None else _RANK[m.group(1)]


def _variants(groups: dict[tuple, list[int]], lines: list[str]) -> set[int]:
    """A template seen (almost) only once that differs in one token from a frequent one: the
    odd one out (`....F....` among rows of dots; a line whose one word reads differently)."""
    keep: set[int] = set()
    near: dict[tuple, list[tuple]] = defaultdict(list)
    for key, idx in groups.items():
        for pos in range(len(key)):
            near[(len(key), pos, key[:pos] + key[pos + 1:])].append(key)
    for members in near.values():
        if len(members) < 2:
            continue
        counts = [(len(groups[k]), k) for k in members]
        total = sum(c for c, _ in counts)
        top, top_key = max(counts)
        if total < MIN_VARIANT_GROUP or top < DOMINANT * (total - 1):
            continue
        for c, k in counts:
            if k != top_key and is_rare(c, total) and c < top:
                keep |= set(groups[k])
    # values of one token that differ inside a single template (`exit status 1` among 0s)
    for key, idx in groups.items():
        if MIN_VARIANT_GROUP <= len(idx) < MIN_GROUP and len(key) >= MIN_FIELDS:
            keep |= _field_outliers(idx, _columns(lines, idx, len(key)))
    return keep


def _rare_templates(groups: dict[tuple, list[int]], nonblank: int) -> set[int]:
    """In a repetitive failing run, a line whose template is seen once stands out."""
    if nonblank < MIN_REPETITIVE_LINES:
        return set()
    frequent = sum(len(idx) for idx in groups.values() if len(idx) >= 3)
    if frequent < REPETITIVE * nonblank:
        return set()
    singles = [idx[0] for idx in groups.values() if len(idx) == 1]
    return set(singles) if is_rare(len(singles), nonblank) else set()
