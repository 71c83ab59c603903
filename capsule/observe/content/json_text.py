"""JSON as written: a parse that keeps each number's source text and every duplicate key, an
emitter that writes them back exactly, and the token stream that proves a form lossless.

Not responsible for choosing a form (json_crusher) nor for TOON (toon.py, which writes the
same literal text through `literal`).
Invariant: tokens(dumps(parse(t))) == tokens(t) for every JSON text t: every number literal
(digits, exponent, sign of zero), every string, every key — duplicates and order included.
"""

from __future__ import annotations

import json
import re


class Int(int):
    """An integer that remembers how it was written (`-0`, 40 digits…)."""

    def __new__(cls, text: str):
        obj = super().__new__(cls, int(text))
        obj.text = text
        return obj


class Float(float):
    """A number with a fraction or exponent, remembering its text (`1e999`, 36 digits of pi,
    `-0.0`); its float value is only what the arithmetic (outliers, ranges) uses."""

    def __new__(cls, text: str):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


class Pairs(dict):
    """An object with a repeated key: reads like the dict a JSON parser gives (last value
    wins) and keeps every (key, value) pair in order, so it can be written back whole."""

    def __init__(self, pairs: list):
        super().__init__(pairs)
        self.pairs = pairs


def _object(pairs: list):
    obj = dict(pairs)
    return obj if len(obj) == len(pairs) else Pairs(pairs)


_quote = json.encoder.encode_basestring    # the C quoting json.dumps(ensure_ascii=False) uses

_HOOKS = dict(parse_float=Float, parse_int=Int, parse_constant=Float, object_pairs_hook=_object)
DECODER = json.JSONDecoder(**_HOOKS)


def loads(text: str):
    """Like json.loads, every number an Int/Float carrying its source text."""
    return json.loads(text, **_HOOKS)


def has_duplicates(value) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Pairs):
            return True
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def literal(v) -> str:
    """The text of a primitive as JSON writes it: a parsed number's own text."""
    text = getattr(v, "text", None)
    if text is not None:
        return text
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if not isinstance(v, str):      # a YAML date or timestamp: its text, as a string
        v = str(v)
    return _quote(v)


def ident(v) -> str:
    """A key under which two primitives are equal only when written the same (1 ≠ 1.0 ≠ "1")."""
    return literal(v)


def items(obj: dict) -> list:
    """An object's (key, value) pairs, a repeated key as often as it was written."""
    return obj.pairs if isinstance(obj, Pairs) else list(obj.items())


def dumps(value, indent: int | None = None, sep: str = ": ") -> str:
    """JSON text of value, numbers exactly as parsed; indent None writes one line with
    `", "`-less commas and `sep` after each key (the crusher keeps `"key": value` greppable)."""
    out: list[str] = []
    _write(value, out, indent, sep, 0)
    return "".join(out)


def _write(v, out: list[str], indent: int | None, sep: str, depth: int) -> None:
    if isinstance(v, dict):
        pairs = items(v)
        if not pairs:
            out.append("{}")
            return
        out.append("{")
        for i, (k, x) in enumerate(pairs):
            if i:
                out.append(",")
            if indent is not None:
                out.append("\n" + " " * (indent * (depth + 1)))
            out.append(_quote(k) + sep)
            _write(x, out, indent, sep, depth + 1)
        if indent is not None:
            out.append("\n" + " " * (indent * depth))
        out.append("}")
    elif isinstance(v, list):
        if not v:
            out.append("[]")
            return
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            if indent is not None:
                out.append("\n" + " " * (indent * (depth + 1)))
            _write(x, out, indent, sep, depth + 1)
        if indent is not None:
            out.append("\n" + " " * (indent * depth))
        out.append("]")
    else:
        out.append(literal(v))


# ---------------------------------------------------------------- the proof


_TOKEN = re.compile(r"""[ \t\r\n]*(?:
    ([{}\[\],:])                                           # 1 punctuation
  | "((?:[^"\\\x00-\x1f]|\\.)*)"                             # 2 string body
  | (-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|NaN|-?Infinity)  # 3 number, as written
  | (true|false|null)                                      # 4 literal
  )""", re.X)
_TAIL = re.compile(r"[ \t\r\n]*")
_scanstring = json.decoder.scanstring


def tokens(text: str) -> list:
    """The JSON token stream of text: punctuation, ('s', decoded string), ('n', number text),
    true/false/null. Two texts with equal streams differ in whitespace and string escapes
    only; raises ValueError on text that is not a JSON token sequence."""
    out: list = []
    append = append_ = out.append
    pos, n = 0, len(text)
    for m in _TOKEN.finditer(text):
        if m.start() != pos:
            break
        pos = m.end()
        punct, body, num, word = m.groups()
        if punct is not None:
            append(punct)
        elif body is not None:
            append_(("s", _scanstring(body + '"', 0, True)[0] if "\\" in body else body))
        elif num is not None:
            append(("n", num))
        else:
            append(word)
    pos = _TAIL.match(text, pos).end()
    if pos != n:
        raise ValueError(f"not a JSON token at {pos}: {text[pos:pos + 20]!r}")
    return out


def stream_tokens(texts_tokens: list[list]) -> list:
    """The tokens of several top-level values written as one JSON array."""
    out: list = ["["]
    for k, t in enumerate(texts_tokens):
        if k:
            out.append(",")
        out.extend(t)
    out.append("]")
    return out


def numbers(text: str) -> list[str]:
    """Every number literal of a JSON text, in order (what a lossless form must write verbatim)."""
    return [t[1] for t in tokens(text) if isinstance(t, tuple) and t[0] == "n"]
