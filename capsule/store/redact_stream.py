"""Secrets out of a stream as it is written (a live `ctx run`'s journal): redact.py's one pass, by lines.

Not responsible for the patterns (redact.py), for when to write (the caller asks for what is ready)
nor for where the bytes go. Complete lines are redacted with the lines before them in view (a token a
terminal wrapped onto the next line, a keyword on the line above); a partial line waits for its end,
and so does a private key for its END line, each up to a bound past which the bytes are redacted as
they are (a 64 MiB line is never held whole: it goes in pieces cut between tokens).
Invariant: every byte fed comes out exactly once, in order; a secret is never split between two
pieces unless it is longer than the bound; memory is bounded (held bytes + CONTEXT).
"""

from __future__ import annotations

import re

from capsule.store import redact

LINE_MAX = 1 << 20          # a partial line held longer than this is redacted and written in pieces
HOLD_MAX = 256 << 10        # a private key's body waits this long for its END line
CONTEXT = 4096              # bytes already written that the next piece is redacted with in view
SMALL = 64 << 10            # a piece this small is first asked whether it can hold a secret at all
TOKEN_TAIL = 4096           # a piece of an over-long line ends at the last separator in its final 4 KiB
# Blocks whose secret pattern needs their closing line (store/data/secrets.toml's multi-line kinds).
OPENERS = ((b"-----BEGIN ", b"-----END "), (b"PuTTY-User-Key-File-", b"Private-MAC:"))
_SEPARATOR = re.compile(rb"[^A-Za-z0-9_+/=.:~-]")


class StreamRedactor:
    """feed() bytes as they come; ready() the redacted bytes that may be written now; rest() at the end."""

    def __init__(self, line_max: int = LINE_MAX, hold_max: int = HOLD_MAX):
        self.line_max, self.hold_max = line_max, hold_max
        self._held = bytearray()
        self._context = b""
        self._clean = True          # nothing written so far could hold a secret (see _take)

    def feed(self, chunk: bytes) -> None:
        self._held += chunk

    def held(self) -> int:
        return len(self._held)

    def ready(self) -> bytes:
        """The redacted complete lines (and pieces of an over-long line) that no later byte can change."""
        return self._take(self._cut())

    def rest(self) -> bytes:
        """Everything still held, redacted (the stream has ended)."""
        return self._take(len(self._held))

    def _cut(self) -> int:
        held = self._held
        cut = held.rfind(b"\n") + 1
        if cut and len(held) <= self.hold_max:
            for opener, closer in OPENERS:
                at = held.rfind(opener, 0, cut)
                if at >= 0 and held.find(closer, at) < 0:
                    cut = held.rfind(b"\n", 0, at) + 1       # from the opener's line on, wait for the closer
                    break
        if cut == 0 and len(held) > self.line_max:
            tail = len(held) - TOKEN_TAIL
            last = None
            for last in _SEPARATOR.finditer(held, tail):
                pass
            cut = last.end() if last is not None else len(held)
        return cut

    def _take(self, cut: int) -> bytes:
        if cut <= 0:
            return b""
        piece = bytes(self._held[:cut])
        del self._held[:cut]
        context = self._context
        self._context = (context + piece)[-CONTEXT:]
        if not redact.enabled():
            return piece
        before = context.decode("utf-8", "surrogateescape")
        text = piece.decode("utf-8", "surrogateescape")
        # A small piece that cannot hold a secret is written as it is (the patterns need not load).
        # After clean pieces the context is clean too: only its last bytes (a word or a token the cut
        # went through) are asked about again, not all CONTEXT of them.
        if len(piece) <= SMALL:
            self._clean = not redact.may_hold_secret((before[-64:] if self._clean else before) + text)
            if self._clean:
                return piece
        else:
            self._clean = False
        spans = [(max(a, len(before)), b, kind) for a, b, kind in redact.find(before + text) if b > len(before)]
        if not spans:
            return piece
        out, at = [], 0
        for a, b, kind in spans:
            a, b = a - len(before), b - len(before)
            out.append(text[at:a])
            out.append(redact.MARKER.format(kind=kind))
            at = b
        out.append(text[at:])
        return "".join(out).encode("utf-8", "surrogateescape")
