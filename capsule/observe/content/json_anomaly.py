"""Which parts of a JSON collection must survive sampling, and why: rows of a table (error
fields, unexpected nulls, numeric outliers, rare categories, intent hits) and the items of any
long array or wide map (error text, nulls among values, rare types and shapes, rare string
templates, outliers, intent hits).

Not responsible for rendering what is kept (json_reduce) nor for the lossless tier (json_crusher).
Invariant: every reason names the rule that kept the part; an error-class value is always kept.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from capsule.observe.content.toon_decode import value_kind
from capsule.observe.verbatim import is_verbatim

HEAD_ROWS = 3
TAIL_ROWS = 1
NULL_ANOMALY_SHARE = 0.8     # a null is anomalous where >= 80% of rows have a value
OUTLIER_Z = 3.5              # robust z-score (median / MAD) beyond which a number is an outlier
RARE_SHARE = 0.02            # a categorical value this rare is anomalous (rows >= 50)
RARE_ITEM_SHARE = 0.02       # an item type / shape / string template this rare is anomalous...
RARE_ITEM_MAX = 2            # ...or held by at most this many items (collections of 20+)
RARE_CAP = 12                # rarity and outlier keeps per collection (error-class ones: no cap)

ERROR_KEY = re.compile(r"(?i)(?:^|_|-)(?:err|error|errors|exception|fail|failed|failure|fault|"
                        r"fatal|traceback|stderr|warning|warnings)(?:$|_|-)")
_ERROR_VALUE = re.compile(r"(?i)\b(?:error|errors|exception|fail(?:ed|ure)?|fatal|panic|"
                          r"denied|refused|timed? ?out|traceback|invalid|crash(?:ed)?|abort(?:ed)?)\b")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*[A-Za-z0-9_]|[A-Za-z0-9]")
_STOP = frozenset(
    "the a an and or of to in on for with from by is are was be it this that what which why how "
    "find show list get check see look does do did not no all any each into out at as find "
    "json output result results value values field fields row rows item items data".split())


@dataclass
class Sampled:
    """A large array reduced to the rows worth reading, with the why of each kept row."""

    total: int
    kept: list[int]                                  # original indices, ascending
    why: dict[int, list[str]] = field(default_factory=dict)
    schema: str = ""


def intent_terms(intent: str | None) -> list[str]:
    if not intent:
        return []
    terms = []
    for w in _WORD.findall(intent):
        lw = w.lower()
        if lw not in _STOP and (len(lw) >= 3 or any(c.isdigit() for c in lw)):
            terms.append(lw)
    return sorted(set(terms))


def _number(v) -> float | None:
    """A finite number's value for the arithmetic rules (1e999 and NaN are no outliers' yardstick)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        x = float(v)
    except OverflowError:   # a 400-digit integer
        return None
    return x if math.isfinite(x) else None


def _flat(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False, sort_keys=True, default=str).lower()


def _mark(why: dict[int, list[str]], i: int, reason: str) -> None:
    """Record one reason to keep item i (each reason once, in the order found)."""
    reasons = why.setdefault(i, [])
    if reason not in reasons:
        reasons.append(reason)


def anomalies(rows: list[dict], intent: str | None = None) -> dict[int, list[str]]:
    """Index -> reasons for every row that must survive sampling."""
    n = len(rows)
    why: dict[int, list[str]] = {}

    def mark(i: int, reason: str) -> None:
        _mark(why, i, reason)

    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    for k in keys:
        col = [r.get(k) for r in rows]
        present = [v for v in col if v is not None and v != "" and v != [] and v != {}]
        if ERROR_KEY.search(k):
            for i, v in enumerate(col):
                if v not in (None, False, "", 0, [], {}) and str(v).lower() not in ("ok", "none", "null"):
                    mark(i, f"error field {k}")
        if n and len(present) / n >= NULL_ANOMALY_SHARE and len(present) < n:
            for i, v in enumerate(col):
                if v is None or v == "" or k not in rows[i]:
                    mark(i, f"null {k}")
        nums = [(i, x) for i, v in enumerate(col) if (x := _number(v)) is not None]
        if len(nums) >= 8:
            vals = sorted(x for _, x in nums)
            med = vals[len(vals) // 2]
            mad = sorted(abs(x - med) for x in vals)[len(vals) // 2]
            if mad > 0:
                for i, x in nums:
                    if abs(x - med) / (1.4826 * mad) > OUTLIER_Z:
                        mark(i, f"outlier {k}")
            else:
                off = [(i, x) for i, x in nums if x != med]
                if 0 < len(off) <= max(1, int(len(nums) * 0.05)):
                    for i, _ in off:
                        mark(i, f"outlier {k}")
        strs = [(i, v) for i, v in enumerate(col) if isinstance(v, (str, bool))]
        if len(strs) >= 50:
            counts = Counter(v for _, v in strs)
            if len(counts) <= 12:
                limit = max(1, int(len(strs) * RARE_SHARE))
                for i, v in strs:
                    if counts[v] <= limit:
                        mark(i, f"rare {k}")
    for i, r in enumerate(rows):
        for v in r.values():
            if isinstance(v, str) and _ERROR_VALUE.search(v):
                mark(i, "error text")
                break
    terms = intent_terms(intent)
    if terms:
        flats = [_flat(r) for r in rows]
        for t in terms:
            pat = re.compile(r"(?<![a-z0-9_])" + re.escape(t) + r"(?![a-z0-9_])")
            hits = [i for i, f in enumerate(flats) if pat.search(f)]
            if hits and len(hits) <= max(3, n // 10):
                for i in hits:
                    mark(i, f"intent '{t}'")
    return why


def rows_schema(rows: list[dict]) -> str:
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    parts = []
    for k in keys:
        col = [r.get(k) for r in rows]
        nulls = sum(1 for v in col if v is None)
        kinds = Counter(value_kind(v) for v in col if v is not None)
        kind = "|".join(t for t, _ in kinds.most_common()) or "null"
        nums = [(x, v) for v in col if (x := _number(v)) is not None]
        desc = f"{k}:{kind}"
        if nums and len(nums) == len(col) - nulls:   # the range as written, never rounded
            order = sorted(nums, key=lambda p: (p[0], _fmt(p[1])))
            desc += f" {_fmt(order[0][1])}..{_fmt(order[-1][1])}"
        else:
            distinct = Counter(v for v in col if isinstance(v, (str, bool)))
            if 0 < len(distinct) <= 4 and sum(distinct.values()) >= 4:
                desc += " {" + ",".join(f"{v}×{c}" for v, c in distinct.most_common()) + "}"
        if nulls:
            desc += f" null×{nulls}"
        parts.append(desc)
    return "; ".join(parts)


def _fmt(v) -> str:
    return getattr(v, "text", None) or json.dumps(v)


def sample(rows: list[dict], intent: str | None) -> Sampled:
    n = len(rows)
    why = anomalies(rows, intent)
    keep = set(range(min(HEAD_ROWS, n))) | set(range(max(0, n - TAIL_ROWS), n)) | set(why)
    return Sampled(n, sorted(keep), why, rows_schema(rows))


# ---------------------------------------------------------------- items of any collection


def _template(s: str) -> str:
    """A string's shape: digit runs -> 0, letter runs -> a (`5.0.0-dev.2023` -> `0.0.0-a.0`)."""
    return re.sub(r"[A-Za-z]+", "a", re.sub(r"\d+", "0", s))[:40]


def value_shape(v) -> str:
    if isinstance(v, dict):
        return "object{" + ",".join(sorted(v)[:8]) + "}"
    if isinstance(v, list):
        return "array"
    return value_kind(v)


def is_error_value(v) -> bool:
    return isinstance(v, str) and (bool(_ERROR_VALUE.search(v)) or is_verbatim(v))


def value_anomalies(values: list, keys: list[str] | None = None,
                    intent: str | None = None) -> dict[int, list[str]]:
    """Index -> reasons for the items of a long array (keys None) or the values of a wide map
    (keys: its keys) that must survive. Error-class items are always kept; rarity and outlier
    keeps are capped at RARE_CAP per rule (the rest are counted in the elision)."""
    n = len(values)
    why: dict[int, list[str]] = {}

    def mark(i: int, reason: str) -> None:
        _mark(why, i, reason)

    def mark_capped(idx: list[int], reason: str) -> None:
        for i in idx[:RARE_CAP]:
            mark(i, reason)

    def mark_spread(groups: dict, reason: str) -> None:
        """Up to RARE_CAP items over all rare groups, one of each group in turn (latest first)."""
        queues = [sorted(g, reverse=True) for g in groups.values()]
        picked: list[tuple[int, str]] = []
        while len(picked) < RARE_CAP and any(queues):
            for key, q in zip(groups, queues):
                if q and len(picked) < RARE_CAP:
                    picked.append((q.pop(0), key))
        for i, key in picked:
            mark(i, f"{reason} {key}")

    rare = max(RARE_ITEM_MAX, int(n * RARE_ITEM_SHARE))
    for i, v in enumerate(values):
        k = keys[i] if keys else None
        if k is not None and (ERROR_KEY.search(k) or is_verbatim(k)) and v not in (None, False, "", 0, [], {}):
            mark(i, "error key")
        if is_error_value(v):
            mark(i, "error text")
        elif isinstance(v, (dict, list)) and holds_error(v):
            mark(i, "error text inside")
    present = [v for v in values if v is not None]
    if n and present and len(present) < n and len(present) / n >= NULL_ANOMALY_SHARE:
        for i, v in enumerate(values):
            if v is None:
                mark(i, "null among values")
    if n >= 20:
        shapes = [value_shape(v) for v in values]
        counts = Counter(shapes)
        if len(counts) > 1:
            rare_s = {s for s, c in counts.items() if c <= rare and c < n / 2}
            mark_spread({s: [i for i, x in enumerate(shapes) if x == s] for s in rare_s}, "rare type")
        strs = [(i, v) for i, v in enumerate(values) if isinstance(v, str)]
        if len(strs) >= 20:
            templates = Counter(_template(v) for _, v in strs)
            if 1 < len(templates):   # one cap over all rare forms: hashes make many of them
                rare_t = {t for t, c in templates.items() if c <= rare and c < len(strs) / 2}
                groups: dict[str, list[int]] = {}
                for i, v in strs:
                    t = _template(v)
                    if t in rare_t:
                        groups.setdefault(t, []).append(i)
                mark_spread(groups, "rare form")
    nums = [(i, x) for i, v in enumerate(values) if (x := _number(v)) is not None]
    if len(nums) >= 8:
        mark_capped(_outliers(nums), "outlier")
    terms = intent_terms(intent)
    if terms:
        flats = [((keys[i] + " ") if keys else "") + _flat_any(v) for i, v in enumerate(values)]
        for t in terms:
            pat = re.compile(r"(?<![a-z0-9_])" + re.escape(t) + r"(?![a-z0-9_])")
            hits = [i for i, f in enumerate(flats) if pat.search(f)]
            if hits and len(hits) <= max(3, n // 10):
                for i in hits:
                    mark(i, f"intent '{t}'")
    return why


def _outliers(nums: list[tuple[int, float]]) -> list[int]:
    vals = sorted(x for _, x in nums)
    med = vals[len(vals) // 2]
    mad = sorted(abs(x - med) for x in vals)[len(vals) // 2]
    if mad > 0:
        return [i for i, x in nums if abs(x - med) / (1.4826 * mad) > OUTLIER_Z]
    off = [i for i, x in nums if x != med]
    return off if 0 < len(off) <= max(1, int(len(nums) * 0.05)) else []


def holds_error(v, budget: int = 2000) -> bool:
    stack = [v]
    while stack and budget > 0:
        budget -= 1
        x = stack.pop()
        if isinstance(x, dict):
            for k, y in x.items():
                if ERROR_KEY.search(k) and y not in (None, False, "", 0, [], {}):
                    return True
                stack.append(y)
        elif isinstance(x, list):
            stack.extend(x)
        elif is_error_value(x):
            return True
    return False


def _flat_any(v) -> str:
    return (json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
            if isinstance(v, (dict, list)) else str(v)).lower()
