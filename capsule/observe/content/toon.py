"""TOON: a compact, line-oriented re-serialisation of JSON values, with its decoder.

Responsible for encode(value) -> str and decode(str) -> value over JSON data (dict, list,
str, int, float, bool, None). Not responsible for choosing when TOON pays (json_crusher does).
Invariant: for every JSON value x that encode accepts, strict_equal(decode(encode(x)), x);
callers still check it at run time and emit the original on any mismatch.

Shape (the public TOON idiom; comma delimiter, two-space indent):
    key: value                 primitive field
    key:                       nested object, fields indented below (no fields: empty object)
    key[N]: a,b,c              array of primitives
    key[N]{f1,f2}:             array of uniform flat objects, one row per line below
    key[N]:                    any other array: N "- item" lines below
Strings are quoted (JSON escapes) only when they would be ambiguous.
"""

from __future__ import annotations

import json
import math
import re

INDENT = "  "
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
_HEADER = re.compile(r"\[(\d+)\]")


class ToonError(ValueError):
    """Raised by decode on text that is not TOON as encode writes it."""


# ---------------------------------------------------------------- encoding


def _needs_quotes(s: str, where: str = "item") -> bool:
    """Whether a string must be quoted to read back as the same string.

    where: "cell" (a tabular row or primitive array: split on ','), "field" (after `key: `),
    "item" (after `- `: a ':' would read as an object) or "root" (a lone value).
    """
    if not s or s != s.strip() or s in ("true", "false", "null") or _NUMBER.match(s):
        return True
    if s[0] == '"' or any(ord(ch) < 0x20 or ch in "\x7f\u2028\u2029\x85" for ch in s):
        return True
    if where == "cell":
        return "," in s or '"' in s
    if where == "field":
        return False
    return ":" in s or s[0] == "[" or s == "-"


def _primitive(v, where: str = "item") -> str:
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
        return json.dumps(v, ensure_ascii=False) if _needs_quotes(v, where) else v
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def _key(k: str) -> str:
    if not isinstance(k, str):
        raise TypeError("object keys must be strings")
    return k if _BARE_KEY.match(k) else json.dumps(k, ensure_ascii=False)


def _is_primitive(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _tabular_fields(arr: list) -> list[str] | None:
    if not arr or not all(isinstance(x, dict) and x for x in arr):
        return None
    fields = list(arr[0])
    keyset = set(fields)
    for row in arr:
        if len(row) != len(fields) or set(row) != keyset:
            return None
        if not all(_is_primitive(v) for v in row.values()):
            return None
    return fields


def _array_lines(prefix: str, arr: list, depth: int, out: list[str]) -> None:
    """Write an array whose header starts with prefix (a key or "") at depth."""
    pad = INDENT * depth
    n = len(arr)
    if all(_is_primitive(v) for v in arr):
        cells = ",".join(_primitive(v, "cell") for v in arr)
        out.append(f"{pad}{prefix}[{n}]:" + (f" {cells}" if n else ""))
        return
    fields = _tabular_fields(arr)
    if fields is not None:
        out.append(f"{pad}{prefix}[{n}]{{{','.join(_key(f) for f in fields)}}}:")
        rowpad = INDENT * (depth + 1)
        for row in arr:
            out.append(rowpad + ",".join(_primitive(row[f], "cell") for f in fields))
        return
    out.append(f"{pad}{prefix}[{n}]:")
    for item in arr:
        _list_item(item, depth + 1, out)


def _list_item(item, depth: int, out: list[str]) -> None:
    pad = INDENT * depth
    if _is_primitive(item):
        out.append(f"{pad}- {_primitive(item)}")
    elif isinstance(item, list):
        sub: list[str] = []
        _array_lines("", item, depth + 1, sub)
        out.append(f"{pad}- {sub[0].lstrip(' ')}")
        out.extend(sub[1:])
    elif isinstance(item, dict):
        if not item:
            out.append(f"{pad}-")
            return
        sub = []
        _object_lines(item, depth + 1, sub)   # the object sits at column depth+1
        out.append(f"{pad}- {sub[0].lstrip(' ')}")
        out.extend(sub[1:])
    else:
        raise TypeError(f"not a JSON value: {type(item).__name__}")


def _object_lines(obj: dict, depth: int, out: list[str]) -> None:
    pad = INDENT * depth
    for k, v in obj.items():
        key = _key(k)
        if isinstance(v, dict):
            out.append(f"{pad}{key}:")
            _object_lines(v, depth + 1, out)
        elif isinstance(v, list):
            _array_lines(key, v, depth, out)
        else:
            out.append(f"{pad}{key}: {_primitive(v, 'field')}")


def encode(value) -> str:
    """TOON text for a JSON value (no trailing newline)."""
    out: list[str] = []
    if isinstance(value, dict):
        _object_lines(value, 0, out)
    elif isinstance(value, list):
        _array_lines("", value, 0, out)
    else:
        out.append(_primitive(value, "root"))
    return "\n".join(out)


# ---------------------------------------------------------------- decoding

_decoder = json.JSONDecoder()


def _split_cells(text: str) -> list[str]:
    """Split on commas outside JSON-quoted strings."""
    cells: list[str] = []
    i, n, start = 0, len(text), 0
    while i < n:
        ch = text[i]
        if ch == '"':
            _, i = _decoder.raw_decode(text, i)
            continue
        if ch == ",":
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


def _parse_header(rest: str) -> tuple[int, list[str] | None, str]:
    """rest starts at '['; returns (count, fields or None, text after ':')."""
    m = _HEADER.match(rest)
    if not m:
        raise ToonError(f"bad array header: {rest!r}")
    n = int(m.group(1))
    pos = m.end()
    fields = None
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
        fields = [_parse_key(c)[0] for c in _split_cells(rest[close:j])]
        pos = j + 1
    if rest[pos:pos + 1] != ":":
        raise ToonError(f"array header without ':': {rest!r}")
    after = rest[pos + 1:]
    if after.startswith(" "):
        after = after[1:]
    return n, fields, after


def _read_array(r: _Reader, header: str, depth: int) -> list:
    """header starts at '['; the array's block (if any) is at depth+1."""
    n, fields, after = _parse_header(header)
    if fields is not None:
        rows = []
        for _ in range(n):
            if r.peek_depth() != depth + 1:
                raise ToonError("tabular array shorter than its count")
            cells = _split_cells(r.take(depth + 1))
            if len(cells) != len(fields):
                raise ToonError("row width differs from header")
            rows.append({f: _parse_primitive(c) for f, c in zip(fields, cells)})
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
        return _read_array(r, body, depth + 1)   # its block sits at depth+2
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
