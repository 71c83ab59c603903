"""TOON: a compact, line-oriented re-serialisation of JSON values, with its decoder.

Responsible for encode(value) -> str and decode(str) -> value over JSON data (dict, list,
str, int, float, bool, None). Not responsible for choosing when TOON pays (json_crusher does).
Invariant: for every JSON value x that encode accepts, strict_equal(decode(encode(x)), x)
(equal as data: a key stated once in a table header comes back after the row's other keys);
callers still check it at run time and emit the original on any mismatch.

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

INDENT = "  "
DELIMITERS = (",", "\t", " ")       # tabular cell delimiters encode accepts
CONSTANT_MIN_ROWS = 3               # a column equal in all rows is stated once from this many rows
DERIVED_MIN_ROWS = 8                # a column repeating another is stated once from this many rows
PREFIX_MIN = 4                      # ... when it is a prefix of at least this many characters
SPARSE_MIN_FILL = 0.5               # rows lacking some keys are a table when this share of cells is filled
SPARSE = "an empty cell means the row lacks that key"   # (comma and tab rows only)
ALSO = " every row also has "       # after a tabular header: the columns stated once
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")                    # one bare part of a path
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
_HEADER = re.compile(r"\[(\d+)\]")


class ToonError(ValueError):
    """Raised by decode on text that is not TOON as encode writes it."""


# ---------------------------------------------------------------- encoding


def _needs_quotes(s: str, where: str = "item", delim: str = ",") -> bool:
    """Whether a string must be quoted to read back as the same string.

    where: "cell" (a tabular row or primitive array: split on any character of delim),
    "field" (after `key: `),
    "item" (after `- `: a ':' would read as an object) or "root" (a lone value).
    """
    if not s or s != s.strip() or s in ("true", "false", "null") or _NUMBER.match(s):
        return True
    if s[0] == '"' or any(ord(ch) < 0x20 or ch in "\x7f\u2028\u2029\x85" for ch in s):
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


def _key(k: str) -> str:
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
    for k, v in obj.items():
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


def _at(obj: dict, path: tuple[str, ...]):
    for part in path:
        obj = obj[part]
    return obj


def _has(obj: dict, path: tuple[str, ...]) -> bool:
    try:
        _at(obj, path)
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
        first = json.dumps(_at(arr[0], f))
        if all(json.dumps(_at(row, f)) == first for row in arr[1:]):
            same.append(f)
    return same[:-1] if len(same) == total else same


def _derived(arr: list, cols: list[tuple[str, ...]]) -> dict[tuple[str, ...], tuple[tuple[str, ...], int | None]]:
    """Columns that repeat another column in every row: field -> (source, None) for a copy,
    (source, k) when the field is always the source's first k characters (k >= PREFIX_MIN)."""
    if len(arr) < DERIVED_MIN_ROWS:
        return {}
    values = {f: [_at(row, f) for row in arr] for f in cols}
    dumped = {f: json.dumps(v) for f, v in values.items()}
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
            f"{_field(f)}={_primitive(_at(arr[0], f), 'cell', ',;')}" for f in const))
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
                "" if f in partial and not _has(row, f) else _primitive(_at(row, f), "cell", delim)
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
    for k, v in obj.items():
        key = _key(k)
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


# ---------------------------------------------------------------- decoding

_decoder = json.JSONDecoder()


def _split_cells(text: str, delim: str = ",") -> list[str]:
    """Split on delim outside JSON-quoted strings."""
    cells: list[str] = []
    i, n, start = 0, len(text), 0
    while i < n:
        ch = text[i]
        if ch == '"':
            _, i = _decoder.raw_decode(text, i)
            continue
        if ch == delim:
            cells.append(text[start:i])
            start = i + 1
        i += 1
    cells.append(text[start:])
    return cells


def _parse_primitive(cell: str):
    if cell.startswith('"'):
        value, end = _decoder.raw_decode(cell)
        if end != len(cell):
            raise ToonError(f"junk after quoted string: {cell!r}")
        return value
    if cell == "null":
        return None
    if cell == "true":
        return True
    if cell == "false":
        return False
    if _NUMBER.match(cell):
        if any(c in cell for c in ".eE"):
            return float(cell)
        return int(cell)
    if not cell or cell != cell.strip():
        raise ToonError(f"ambiguous bare value: {cell!r}")
    return cell


def _parse_key(text: str) -> tuple[str, int]:
    if text.startswith('"'):
        key, end = _decoder.raw_decode(text)
        if not isinstance(key, str):
            raise ToonError("quoted key is not a string")
        return key, end
    m = re.match(r"[A-Za-z_][A-Za-z0-9_.]*", text)
    if not m:
        raise ToonError(f"bad key in line: {text!r}")
    return m.group(0), m.end()


class _Reader:
    def __init__(self, text: str):
        self.lines = text.split("\n") if text else []
        self.i = 0

    def peek_depth(self) -> int | None:
        if self.i >= len(self.lines):
            return None
        line = self.lines[self.i]
        spaces = len(line) - len(line.lstrip(" "))
        if spaces % 2:
            raise ToonError(f"line {self.i + 1}: odd indentation")
        return spaces // 2

    def take(self, depth: int) -> str:
        line = self.lines[self.i]
        self.i += 1
        return line[depth * 2:]


def _parse_field(text: str) -> tuple[tuple[str, ...], int]:
    """A tabular header field at the start of text: (path, end)."""
    if text.startswith('"'):
        key, end = _parse_key(text)
        return (key,), end
    m = _PATH.match(text)
    if not m:
        raise ToonError(f"bad field in header: {text!r}")
    return tuple(m.group(0).split(".")), m.end()


def _parse_fields(text: str) -> tuple[list[tuple[str, ...]], str]:
    """The fields between '{' and '}' and the delimiter they (and the rows) are split by."""
    first, end = _parse_field(text)
    if end == len(text):
        return [first], ","
    delim = text[end]
    if delim not in DELIMITERS:
        raise ToonError(f"unknown delimiter {delim!r} in header")
    fields = []
    for cell in _split_cells(text, delim):
        path, end = _parse_field(cell)
        if end != len(cell):
            raise ToonError(f"junk after field: {cell!r}")
        fields.append(path)
    return fields, delim


def _parse_constants(text: str) -> list[tuple[tuple[str, ...], object]]:
    """`f1=v1, f2=v2` as (path, value) pairs."""
    out = []
    for k, cell in enumerate(_split_cells(text)):
        if k:
            if not cell.startswith(" "):
                raise ToonError(f"bad constant list: {text!r}")
            cell = cell[1:]
        path, end = _parse_field(cell)
        if cell[end:end + 1] != "=":
            raise ToonError(f"constant without '=': {cell!r}")
        out.append((path, _parse_primitive(cell[end + 1:])))
    return out


_FIRST = re.compile(r" is the first (\d+) characters of ")
_SAME = " is the same as "


def _parse_tail(text: str) -> tuple[list, list, bool]:
    """The clauses after a tabular header's ':' — (constants, derived, sparse) where derived
    holds (field, source, k or None)."""
    constants: list = []
    derived: list = []
    sparse = False
    if not text.startswith(" "):
        raise ToonError(f"junk after tabular header: {text!r}")
    for clause in _split_cells(text, ";"):
        if not clause.startswith(" "):
            raise ToonError(f"bad clause after tabular header: {clause!r}")
        clause = clause[1:]
        if clause.startswith(ALSO.lstrip()):
            constants += _parse_constants(clause[len(ALSO.lstrip()):])
            continue
        if clause == SPARSE:
            sparse = True
            continue
        field, end = _parse_field(clause)
        rest = clause[end:]
        m = _FIRST.match(rest)
        if m:
            k, rest = int(m.group(1)), rest[m.end():]
        elif rest.startswith(_SAME):
            k, rest = None, rest[len(_SAME):]
        else:
            raise ToonError(f"bad clause after tabular header: {clause!r}")
        source, end = _parse_field(rest)
        if end != len(rest):
            raise ToonError(f"junk after clause: {clause!r}")
        derived.append((field, source, k))
    return constants, derived, sparse


class _Header:
    def __init__(self, n: int, fields, delim: str, after: str, tail: tuple = ([], [], False)):
        self.n, self.fields, self.delim, self.after = n, fields, delim, after
        self.constants, self.derived, self.sparse = tail


def _parse_header(rest: str) -> _Header:
    """rest starts at '['; count, fields (None unless tabular), delimiter, constant columns and
    the text after ':'."""
    m = _HEADER.match(rest)
    if not m:
        raise ToonError(f"bad array header: {rest!r}")
    n = int(m.group(1))
    pos = m.end()
    fields, delim, tail = None, ",", ([], [], False)
    if rest[pos:pos + 1] == "{":
        close = pos + 1
        j = close   # fields may be quoted and contain '}': skip quoted runs
        while j < len(rest):
            if rest[j] == '"':
                _, j = _decoder.raw_decode(rest, j)
                continue
            if rest[j] == "}":
                break
            j += 1
        fields, delim = _parse_fields(rest[close:j])
        pos = j + 1
    if rest[pos:pos + 1] != ":":
        raise ToonError(f"array header without ':': {rest!r}")
    after = rest[pos + 1:]
    if fields is not None and after:
        tail = _parse_tail(after)
        after = ""
    elif after.startswith(" "):
        after = after[1:]
    return _Header(n, fields, delim, after, tail)


def _put(obj: dict, path: tuple[str, ...], value) -> None:
    for part in path[:-1]:
        nxt = obj.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ToonError(f"path {'.'.join(path)!r} crosses a value")
        obj = nxt
    if path[-1] in obj:
        raise ToonError(f"duplicate field {'.'.join(path)!r}")
    obj[path[-1]] = value


def _read_array(r: _Reader, header: str, depth: int) -> list:
    """header starts at '['; tabular rows sit at depth, any other block at depth+1."""
    h = _parse_header(header)
    n, fields, after = h.n, h.fields, h.after
    if fields is not None:
        rows = []
        for _ in range(n):
            if r.peek_depth() != depth:
                raise ToonError("tabular array shorter than its count")
            line = r.take(depth)
            cells = _split_cells(line, h.delim) if len(fields) > 1 else [line]
            if len(cells) != len(fields):
                raise ToonError("row width differs from header")
            row: dict = {}
            for f, c in zip(fields, cells):
                if not (h.sparse and c == ""):
                    _put(row, f, _parse_primitive(c))
            for f, v in h.constants:
                _put(row, f, v)
            for f, src, k in h.derived:
                try:
                    v = _at(row, src)
                except (KeyError, TypeError):
                    raise ToonError(f"{'.'.join(f)} derives from a missing column") from None
                if k is not None and not isinstance(v, str):
                    raise ToonError(f"{'.'.join(f)} is a prefix of a non-string")
                _put(row, f, v if k is None else v[:k])
            rows.append(row)
        return rows
    if after or n == 0:
        values = [_parse_primitive(c) for c in _split_cells(after)] if after else []
        if len(values) != n:
            raise ToonError("primitive array length differs from its count")
        return values
    items = []
    for _ in range(n):
        if r.peek_depth() != depth + 1:
            raise ToonError("list array shorter than its count")
        items.append(_read_item(r, depth + 1))
    return items


def _read_item(r: _Reader, depth: int):
    line = r.take(depth)
    if line == "-":
        return {}
    if not line.startswith("- "):
        raise ToonError(f"expected list item: {line!r}")
    body = line[2:]
    if body.startswith("["):
        return _read_array(r, body, depth + 1)   # rows at depth+1, a list block at depth+2
    if body.startswith('"'):
        value, end = _decoder.raw_decode(body)
        if end == len(body):
            return value
    elif ":" not in body:   # a bare primitive never contains ':'
        return _parse_primitive(body)
    # an object whose first field shares the hyphen line; it sits at column depth+1
    obj: dict = {}
    _read_field(r, body, depth + 1, obj)
    _read_fields(r, depth + 1, obj)
    return obj


def _read_field(r: _Reader, line: str, depth: int, obj: dict) -> None:
    key, pos = _parse_key(line)
    rest = line[pos:]
    if key in obj:
        raise ToonError(f"duplicate key {key!r}")
    if rest.startswith("["):
        obj[key] = _read_array(r, rest, depth)
    elif rest == ":":
        child: dict = {}
        _read_fields(r, depth + 1, child)
        obj[key] = child
    elif rest.startswith(": "):
        obj[key] = _parse_primitive(rest[2:])
    else:
        raise ToonError(f"bad field line: {line!r}")


def _read_fields(r: _Reader, depth: int, obj: dict) -> None:
    while True:
        d = r.peek_depth()
        if d is None or d < depth:
            return
        if d > depth:
            raise ToonError(f"line {r.i + 1}: unexpected indentation")
        _read_field(r, r.take(depth), depth, obj)


def decode(text: str):
    """The JSON value a TOON text stands for; raises ToonError on malformed text."""
    r = _Reader(text)
    if not r.lines:
        return {}
    first = r.lines[0]
    try:
        if first.startswith("["):
            r.i = 1
            value = _read_array(r, first, 0)
        elif len(r.lines) == 1 and _root_is_primitive(first):
            value = _parse_primitive(first)
            r.i = 1
        else:
            obj: dict = {}
            _read_fields(r, 0, obj)
            value = obj
    except (ValueError, IndexError) as exc:
        if isinstance(exc, ToonError):
            raise
        raise ToonError(str(exc)) from exc
    if r.i != len(r.lines):
        raise ToonError(f"line {r.i + 1}: trailing content")
    return value


def _root_is_primitive(line: str) -> bool:
    if line.startswith('"'):
        _, end = _decoder.raw_decode(line)
        return end == len(line)
    return ":" not in line


def strict_equal(a, b) -> bool:
    """Equality that tells 1 from 1.0 from True and compares key order-insensitively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def round_trips(value, text: str | None = None) -> bool:
    """True when decode(encode(value)) is strictly equal to value."""
    try:
        if text is None:
            text = encode(value)
        return strict_equal(decode(text), value)
    except (ValueError, TypeError, RecursionError):
        return False
