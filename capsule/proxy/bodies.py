"""A request body as the proxy receives it: whole, within the byte cap, or not at all.

Not responsible for what is in the body (rewrite.py) or for forwarding it (app.py).
Invariant: read() returns only a body the client finished sending (its declared Content-Length,
when it declared one); a client that disconnects mid-body raises ClientGone, so nothing of it is
ever forwarded; a body over the cap raises TooLarge before it is held in memory past the cap.
"""

from __future__ import annotations

import os

from capsule.ground import switches

MAX_REQUEST_ENV = switches.PROXY_MAX_REQUEST


class ClientGone(Exception):
    """The client went away (or sent less than it declared): forward nothing."""


class TooLarge(Exception):
    """Over the byte cap: refused in the API's own shape (the upstream's own cap is 32 MB)."""


def cap(default: int) -> int:
    """The byte cap: $JACKIN_CTX_PROXY_MAX_REQUEST_BYTES, else apis.toml's max_request_bytes."""
    raw = os.environ.get(MAX_REQUEST_ENV, "").strip()
    try:
        return max(int(raw), 1) if raw else default
    except ValueError:
        return default


async def read(receive, headers: dict[str, str], limit: int) -> bytes:
    declared = headers.get("content-length")
    expected = None
    if declared is not None:
        try:
            expected = int(declared)
        except ValueError:
            raise ClientGone("unreadable Content-Length") from None
        if expected > limit:
            raise TooLarge(expected)
    parts, size = [], 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ClientGone("disconnected mid-body")
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge(size)
        parts.append(chunk)
        if not msg.get("more_body"):
            break
    if expected is not None and size != expected:
        raise ClientGone(f"{size} of {expected} declared bytes")
    return b"".join(parts)
