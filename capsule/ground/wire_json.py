"""WIRE JSON: a model API request body's JSON value, read and written back byte-stably.

One reader and one writer for every module that hashes or rewrites a body (the proxy door's
rewrite, the conversation key and the stagger's prefix key in route/): equal values give equal
bytes. Not responsible for what is in a body. Invariant: serialize(parse(b)) is the client's own
compact form for every body the client wrote compactly; a value orjson refuses goes through the
json module both ways.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:   # declared in pyproject; an environment installed before it still works, slower
    orjson = None


def parse(raw: bytes) -> Any:
    """The request body's JSON value. orjson (the whole conversation is parsed and written on every
    request: ~3x less CPU than json); the standard parser for what orjson refuses (NaN, integers over
    64 bits, lone surrogates), marked so serialize() writes it back with the same library."""
    if orjson is not None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    value = json.loads(raw)
    return StdDict(value) if isinstance(value, dict) else value


class StdDict(dict):
    """A body orjson could not read: written back by the json module."""


def serialize(body: Any) -> bytes:
    """Compact JSON as the clients write it; one function so equal bodies give equal bytes."""
    if orjson is not None and not isinstance(body, StdDict):
        try:
            return orjson.dumps(body)
        except TypeError:   # e.g. a lone surrogate: the json module escapes it
            pass
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:   # a lone surrogate from the client's JSON: escape it as JSON does
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode("ascii")
