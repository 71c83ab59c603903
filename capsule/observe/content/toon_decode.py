"""TOON decoding and data equality: the inverse of toon.encode, and the check callers run.

Not responsible for encoding (toon.py holds the format description and the encoder).
Invariant: decode(encode(x)) is equal to x as data (strict_equal) for every value encode accepts.
"""

from __future__ import annotations

import json
import math
import re

from capsule.observe.content.json_text import Float, Int, Pairs
from capsule.observe.content.toon_syntax import ALSO, DELIMITERS, SPARSE, ToonError, HEADER, NUMBER, PATH, value_at

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
    if NUMBER.match(cell):   # the number keeps its text: lossless is judged on the text
        if any(c in cell for c in ".eE"):
            return Float(cell)
        return Int(cell)
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
    m = PATH.match(text)
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
    m = HEADER.match(rest)
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
                    v = value_at(row, src)
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


_KINDS = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (dict, "dict"), (list, "list"))


def value_kind(v) -> str:
    for t, name in _KINDS:
        if isinstance(v, t):
            return name
    return "null" if v is None else type(v).__name__


def strict_equal(a, b) -> bool:
    """Equality that tells 1 from 1.0 from True and compares key order-insensitively; two
    numbers that both remember their source text are equal only when written the same, and an
    object with a repeated key equals only the same pairs in the same order."""
    ta = type(a)
    if ta is str or ta is bool or a is None:      # the common leaves, decided at once
        return ta is type(b) and a == b
    if ta is not type(b) and value_kind(a) != value_kind(b):
        return False
    if isinstance(a, Pairs) or isinstance(b, Pairs):
        pa = a.pairs if isinstance(a, Pairs) else list(a.items())
        pb = b.pairs if isinstance(b, Pairs) else list(b.items())
        return len(pa) == len(pb) and all(ka == kb and strict_equal(x, y) for (ka, x), (kb, y) in zip(pa, pb))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    xa, xb = getattr(a, "text", None), getattr(b, "text", None)
    if xa is not None and xb is not None:
        return xa == xb
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b
