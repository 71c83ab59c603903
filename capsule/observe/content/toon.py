"""TOON: a compact, line-oriented re-serialisation of JSON values (decoder: toon_decode.py).

Responsible for encode(value) -> str and decode(str) -> value over JSON data (dict, list,
str, int, float, bool, None). Not responsible for choosing when TOON pays (json_crusher does).
Invariant: for every JSON value x that encode accepts, strict_equal(decode(encode(x)), x)
(equal as data: a key stated once in a table header comes back after the row's other keys);
callers still check it at run time and emit the original on any mismatch. A number parsed by
json_text is written as its source text and decodes to the same text (1e999, -0.0, 40 digits).

Shape (the public TOON idiom; two-space indent):
    key: value                 primitive field
    key:                       nested object, fields indented below (no fields: empty object)
    key[N]: a,b,c              array of primitives
    key[N]{f1,f2}:             array of objects as a table: the N rows follow at the header's
                               own indentation (the count ends them), cells split by the
                               delimiter the header's fields use: comma, tab or single space
                               (the caller measures which is cheapest, see json_crusher)
    key[N]{id,meta.os}:        a bare dotted field is a path: nested objects are flattened
                               (a key with a literal '.' is quoted)
    key[N]:                    any other array: N "- item" lines below
After a table header's ':' the columns not written per row are stated once, '; '-separated:
    every row also has f3=v3, f4=v4              equal (type included) in all N >= 3 rows
    f5 is the same as f1                         a copy of another column (N >= 8)
    f6 is the first 7 characters of f2           a fixed-length prefix of another (N >= 8)
    an empty cell means the row lacks that key   rows with different keys (comma/tab only)
Strings are quoted (JSON escapes) only when they would be ambiguous.
"""

from __future__ import annotations

import json
import math
import re

from capsule.observe.content import json_text
from capsule.observe.content.json_text import ident
from capsule.observe.content.toon_decode import decode, strict_equal
from capsule.observe.content.toon_syntax import (ALSO, DELIMITERS, SPARSE, ToonError, HEADER, NUMBER, PATH,  # noqa: F401
                                                 value_at)

INDENT = "  "
CONSTANT_MIN_ROWS = 3               # a column equal in all rows is stated once from this many rows
DERIVED_MIN_ROWS = 8                # a column repeating another is stated once from this many rows
PREFIX_MIN = 4                      # ... when it is a prefix of at least this many characters
SPARSE_MIN_FILL = 0.5               # rows lacking some keys are a table when this share of cells is filled
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")                    # one bare part of a path


# ---------------------------------------------------------------- encoding


_CONTROL = re.compile("[\x00-\x1f\x7f\u2028\u2029\x85]")   # characters a bare string cannot hold


def _needs_quotes(s: str, where: str = "item", delim: str = ",") -> bool:
    """Whether a string must be quoted to read back as the same string.

    where: "cell" (a tabular row or primitive array: split on any character of delim),
    "field" (after `key: `),
    "item" (after `- `: a ':' would read as an object) or "root" (a lone value).
    """
    if not s or s != s.strip() or s in ("true", "false", "null") or NUMBER.match(s):
        return True
    if s[0] == '"' or _CONTROL.search(s):
        return True
    if where == "cell":
        return any(d in s for d in delim) or '"' in s
    if where == "field":
        return False
    return ":" in s or s[0] == "[" or s == "-"


def _primitive(v, where: str = "item", delim: str = ",") -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    text = getattr(v, "text", None)
    if text is not None:        # a parsed number: written exactly as it was (json_text)
        if not NUMBER.match(text):
            raise ValueError(f"{text} has no TOON form")
        return text
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("non-finite float has no TOON form")
        text = repr(v)
        if "e" in text and "." not in text.split("e")[0]:
            mant, _, exp = text.partition("e")
            text = f"{mant}.0e{exp}"
        return text
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False) if _needs_quotes(v, where, delim) else v
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def _pairs(obj: dict) -> list:
    if isinstance(obj, json_text.Pairs):
        raise ValueError("a repeated key has no TOON form")
    return list(obj.items())


def toon_key(k: str) -> str:
    if not isinstance(k, str):
        raise TypeError("object keys must be strings")
    return k if _BARE_KEY.match(k) else json.dumps(k, ensure_ascii=False)


def _field(path: tuple[str, ...]) -> str:
    """A tabular header field: a bare dotted path, or one quoted key (a literal '.' is quoted)."""
    if len(path) > 1:
        return ".".join(path)
    return path[0] if _SEGMENT.match(path[0]) else json.dumps(path[0], ensure_ascii=False)


def _is_primitive(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _leaves(obj: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]] | None:
    """Paths to the primitive values of a row, nested objects flattened; None when a value is
    an array or an empty object, or a nested key cannot be written as a bare path part."""
    paths: list[tuple[str, ...]] = []
    for k, v in _pairs(obj):
        if not isinstance(k, str):
            raise TypeError("object keys must be strings")
        if _is_primitive(v):
            paths.append(prefix + (k,))
        elif isinstance(v, dict) and v and _SEGMENT.match(k) and \
                all(isinstance(x, str) and _SEGMENT.match(x) for x in v):
            sub = _leaves(v, prefix + (k,))
            if sub is None:
                return None
            paths.extend(sub)
        else:
            return None
    return paths


def _has(obj: dict, path: tuple[str, ...]) -> bool:
    try:
        value_at(obj, path)
        return True
    except (KeyError, TypeError):
        return False


def _tabular_fields(arr: list, sparse_ok: bool = False) -> tuple[list, set] | None:
    """(column paths in first-seen order, the columns some rows lack) when the rows can be a
    table: the same leaf paths in every row, or with sparse_ok a union of them that fills at
    least SPARSE_MIN_FILL of the cells and where no path runs through another's value."""
    if not arr or not all(isinstance(x, dict) and x for x in arr):
        return None
    per_row = [_leaves(row) for row in arr]
    if any(p is None for p in per_row):
        return None
    fields = per_row[0]
    wanted = set(fields)
    if all(len(p) == len(fields) and set(p) == wanted for p in per_row[1:]):
        return fields, set()
    if not sparse_ok:
        return None
    seen: dict = {}
    for paths in per_row:
        for p in paths:
            seen.setdefault(p, None)
    fields = list(seen)
    through = {p[:i] for p in fields for i in range(1, len(p))}
    if any(p in through for p in fields):
        return None   # one row's value is another row's nested object
    if sum(len(p) for p in per_row) < SPARSE_MIN_FILL * len(arr) * len(fields):
        return None
    partial = {f for f in fields if not all(f in set(p) for p in per_row)}
    return fields, partial


def _constants(arr: list, fields: list[tuple[str, ...]], total: int) -> list[tuple[str, ...]]:
    """Columns whose value is the same (type included) in every row; of total columns at
    least one stays in the rows."""
    if len(arr) < CONSTANT_MIN_ROWS:
        return []
    same = []
    for f in fields:
        first = ident(value_at(arr[0], f))
        if all(ident(value_at(row, f)) == first for row in arr[1:]):
            same.append(f)
    return same[:-1] if len(same) == total else same


def _derived(arr: list, cols: list[tuple[str, ...]]) -> dict[tuple[str, ...], tuple[tuple[str, ...], int | None]]:
    """Columns that repeat another column in every row: field -> (source, None) for a copy,
    (source, k) when the field is always the source's first k characters (k >= PREFIX_MIN)."""
    if len(arr) < DERIVED_MIN_ROWS:
        return {}
    values = {f: [value_at(row, f) for row in arr] for f in cols}
    dumped = {f: [ident(x) for x in v] for f, v in values.items()}
    texts = {f: v for f, v in values.items() if all(isinstance(x, str) for x in v)}
    out: dict = {}
    for f in cols:
        if any(src == f for src, _ in out.values()):
            continue   # a source stays in the rows
        k = len(texts[f][0]) if f in texts else 0
        fixed = k >= PREFIX_MIN and all(len(x) == k for x in texts[f])
        for src in cols:
            if src == f or src in out:
                continue
            if dumped[f] == dumped[src]:
                if cols.index(src) < cols.index(f):
                    out[f] = (src, None)
                    break
                continue
            if fixed and src in texts and \
                    all(len(a) > k and a.startswith(b) for a, b in zip(texts[src], texts[f])):
                out[f] = (src, k)
                break
    return out


def _tail(arr: list, const: list, derived: dict, sparse: bool) -> str:
    """What follows a tabular header's ':' — the columns stated once."""
    parts = []
    if const:
        parts.append(ALSO.strip() + " " + ", ".join(
            f"{_field(f)}={_primitive(value_at(arr[0], f), 'cell', ',;')}" for f in const))
    for f, (src, k) in derived.items():
        parts.append(f"{_field(f)} is the same as {_field(src)}" if k is None else
                     f"{_field(f)} is the first {k} characters of {_field(src)}")
    if sparse:
        parts.append(SPARSE)
    return (" " + "; ".join(parts)) if parts else ""


def _array_lines(prefix: str, arr: list, depth: int, out: list[str], delim: str = ",") -> None:
    """Write an array whose header starts with prefix (a key or "") at depth."""
    pad = INDENT * depth
    n = len(arr)
    if all(_is_primitive(v) for v in arr):
        cells = ",".join(_primitive(v, "cell") for v in arr)
        out.append(f"{pad}{prefix}[{n}]:" + (f" {cells}" if n else ""))
        return
    table = _tabular_fields(arr, sparse_ok=delim != " ")
    if table is not None:
        fields, partial = table
        const = _constants(arr, [f for f in fields if f not in partial], len(fields))
        cols = [f for f in fields if f not in const]
        derived = _derived(arr, [f for f in cols if f not in partial])
        cols = [f for f in cols if f not in derived]
        out.append(f"{pad}{prefix}[{n}]{{{delim.join(_field(f) for f in cols)}}}:"
                   + _tail(arr, const, derived, bool(partial)))
        for row in arr:   # rows sit at the header's own indentation; the count ends them
            out.append(pad + delim.join(
                "" if f in partial and not _has(row, f) else _primitive(value_at(row, f), "cell", delim)
                for f in cols))
        return
    out.append(f"{pad}{prefix}[{n}]:")
    for item in arr:
        _list_item(item, depth + 1, out, delim)


def _list_item(item, depth: int, out: list[str], delim: str = ",") -> None:
    pad = INDENT * depth
    if _is_primitive(item):
        out.append(f"{pad}- {_primitive(item)}")
    elif isinstance(item, list):
        sub: list[str] = []
        _array_lines("", item, depth + 1, sub, delim)
        out.append(f"{pad}- {sub[0].lstrip(' ')}")
        out.extend(sub[1:])
    elif isinstance(item, dict):
        if not item:
            out.append(f"{pad}-")
            return
        sub = []
        _object_lines(item, depth + 1, sub, delim)   # the object sits at column depth+1
        out.append(f"{pad}- {sub[0].lstrip(' ')}")
        out.extend(sub[1:])
    else:
        raise TypeError(f"not a JSON value: {type(item).__name__}")


def _object_lines(obj: dict, depth: int, out: list[str], delim: str = ",") -> None:
    pad = INDENT * depth
    for k, v in _pairs(obj):
        key = toon_key(k)
        if isinstance(v, dict):
            out.append(f"{pad}{key}:")
            _object_lines(v, depth + 1, out, delim)
        elif isinstance(v, list):
            _array_lines(key, v, depth, out, delim)
        else:
            out.append(f"{pad}{key}: {_primitive(v, 'field')}")


def encode(value, delimiter: str = ",") -> str:
    """TOON text for a JSON value (no trailing newline); delimiter splits tabular cells."""
    if delimiter not in DELIMITERS:
        raise ValueError(f"delimiter must be one of {DELIMITERS!r}")
    out: list[str] = []
    if isinstance(value, dict):
        _object_lines(value, 0, out, delimiter)
    elif isinstance(value, list):
        _array_lines("", value, 0, out, delimiter)
    else:
        out.append(_primitive(value, "root"))
    return "\n".join(out)



def round_trips(value, text: str | None = None) -> bool:
    """True when decode(encode(value)) is strictly equal to value (decoding: toon_decode.py)."""
    try:
        if text is None:
            text = encode(value)
        return strict_equal(decode(text), value)
    except (ValueError, TypeError, RecursionError):
        return False
