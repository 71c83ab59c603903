"""The proxy's request target -> the upstream URL it is forwarded to, or a refusal.

Not responsible for routing by API (app.py picks the upstream) or for error bodies. The URL is
built from parts (the upstream's scheme, host and port, then the client's path), never by joining
text, so `@host`, `%40host`, `:PORT/...` or `//host` in a target cannot name another server.
Invariant: a returned URL has exactly the configured upstream's scheme, host and port.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

import httpx2


class BadTarget(ValueError):
    """A request target that is not an origin-form path this proxy forwards."""


def origin_path(raw_path: bytes) -> bytes:
    """The client's path if it is an origin-form absolute path (RFC 9112 3.2.1), else BadTarget.
    Dot segments are refused too: under /openai they would climb out of the upstream's base path."""
    if not raw_path.startswith(b"/") or raw_path.startswith(b"//"):
        raise BadTarget("the request target must be a path starting with a single '/'")
    decoded = unquote_to_bytes(raw_path)
    if any(seg in (b".", b"..") for seg in decoded.split(b"/")) or b"\\" in decoded:
        raise BadTarget("the request target must not contain '.' or '..' segments")
    if any(b < 0x21 or b == 0x7F for b in decoded):
        raise BadTarget("the request target must not contain control characters or spaces")
    return raw_path


def upstream_url(upstream: str, sub_path: bytes, query: bytes) -> httpx2.URL:
    """`upstream`'s own base path, then `sub_path` (checked with origin_path), then `?query`."""
    base = httpx2.URL(upstream)
    path = base.raw_path.rstrip(b"/") + origin_path(sub_path)
    url = base.copy_with(raw_path=path + (b"?" + query if query else b""))
    if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):   # belt and braces
        raise BadTarget("the request target would leave the configured upstream")
    return url
