"""The rank subset counts exactly like the whole cl100k encoder, on real tool output and on
generated text built from the characters the pre-tokenizer treats specially; a damaged table
is rebuilt, never trusted; a short-lived process counts a small text without the whole encoder."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from capsule.ground import ranktable, tokens

# Letters, digits and whitespace of several scripts and Unicode classes, contractions, runs.
PIECES = list("aZ09'sStTdDmMlLvVrReE ,.;:!?-_/\\|+*=<>()[]{}\"#$%&@^`~\t\n\r\x0b\x0c\x1c\x1f\x00\x7f") + [
    "\x85", "\xa0", "\u2028", "\u3000", "²", "١", "Ⅷ", "é", "ß", "你", "好", "🙂", "\u0301", "ǅ", "’", "\udcff",
    "  ", "    ", "\n\n", "\r\n", "ll", "ve", "re", "123", "4567", "the", " the", "ing", "++++++++", "--------",
    "================", " | ", "\x1b[31m", "0x7f3a", "deadbeef"]


@pytest.fixture
def encoder(state_dir, monkeypatch):
    monkeypatch.setattr(tokens, "_encoder", None)
    monkeypatch.setattr(tokens, "_subset", None)
    monkeypatch.setattr(tokens, "_failed", False)
    return tokens._load()


def _table(encoder) -> str:
    path = tokens._cache_path().with_suffix(".ranks")
    if not path.exists():
        ranktable.write(path, encoder._mergeable_ranks, encoder._pat_str, encoder._special_tokens)
    return str(path)


def _whole(encoder, text: str) -> int:
    return len(encoder.encode_ordinary(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")))


def _subset_count(path: str, text: str) -> int:
    return ranktable.Subset(path).count(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))


def _real_outputs() -> list[str]:
    runs = [["git", "log", "--stat", "-n", "30"], ["git", "log", "-p", "-n", "3"], ["ls", "-la", "/usr/bin"],
            ["git", "show", "--stat", "HEAD"], [sys.executable, "-c", "import this"],
            [sys.executable, "-c", "print(''.join(map(chr, range(1, 2000))))"]]
    return [subprocess.run(argv, capture_output=True).stdout.decode("utf-8", "surrogateescape") for argv in runs]


def test_the_subset_counts_real_output_like_the_whole_encoder(encoder):
    path = _table(encoder)
    grown = ranktable.Subset(path)          # one subset growing over all the texts, as a process does
    for text in _real_outputs():
        assert text
        for part in (text, text[: len(text) // 3], text[len(text) // 2:]):
            clean = part.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            assert _subset_count(path, part) == _whole(encoder, part)
            assert grown.count(clean) == _whole(encoder, part)


@settings(max_examples=1000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), max_size=60))
def test_the_subset_counts_generated_text_like_the_whole_encoder(encoder, pieces):
    text = "".join(pieces)
    assert _subset_count(_table(encoder), text) == _whole(encoder, text)


def test_a_damaged_table_is_rebuilt_not_trusted(encoder, monkeypatch):
    path = tokens._cache_path().with_suffix(".ranks")
    _table(encoder)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 1000])          # truncated
    with pytest.raises(ValueError):
        ranktable.Subset(str(path))
    monkeypatch.setattr(tokens, "_encoder", None)
    assert tokens.count("hello world, hello table") == _whole(encoder, "hello world, hello table")
    assert ranktable.Subset(str(path)).count("hello world") == 2       # written again, whole


def test_a_short_lived_process_counts_a_small_text_without_the_whole_encoder(state_dir):
    code = ("import subprocess\nfrom capsule.ground import tokens\n"
            f"text = open({__file__!r}).read()\n"
            "n = tokens.count(text)\nprint(n, tokens._encoder is None, tokens.label())\n"
            "assert len(tokens._load().encode_ordinary(text)) == n   # tiktoken imports after its module\n")
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    n, _, label = first.stdout.split()
    assert second.stdout.split() == [n, "True", "cl100k_base"]    # the table written by the first run
    text = open(__file__).read()           # a real text of a fixed size (this file), well under the budget
    assert int(n) == len(tokens._load().encode_ordinary(text)) and label == "cl100k_base"


def test_past_its_budget_a_process_counts_with_the_whole_encoder(encoder, monkeypatch):
    _table(encoder)
    monkeypatch.setattr(tokens, "_encoder", None)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ("".join(letters[(i // 26 ** k) % 26] for k in range(4)) for i in range(tokens.SUBSET_BUDGET_BYTES // 4))
    text = " ".join(words)                                                        # distinct words
    repeated = "the same line, again and again\n" * 20000                          # 640 KB, one segment set
    assert tokens.count("a few words") == 3 and tokens._encoder is None
    assert tokens.count(repeated) == _whole(encoder, repeated) and tokens._encoder is None
    assert tokens.count(text) == _whole(encoder, text) and tokens._encoder is not None


# ---- what one process searched, the next one need not search again ---------------------------

def _clean(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def test_the_next_process_does_not_search_again_what_one_saved(encoder):
    path = _table(encoder)
    log, listing = _real_outputs()[0], _real_outputs()[2]
    first = ranktable.Subset(path)
    assert first.count(_clean(log)) == _whole(encoder, log) and first.looked_at > 0
    first.save_learned()
    second = ranktable.Subset(path)
    assert second.count(_clean(log)) == _whole(encoder, log)
    assert second.looked_at == 0                                  # every segment was searched before
    assert second.count(_clean(listing)) == _whole(encoder, listing) and second.looked_at > 0
    second.save_learned()
    third = ranktable.Subset(path)                                # the file holds both now
    assert third.count(_clean(log + listing)) == _whole(encoder, log + listing) and third.looked_at == 0


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "other shape"])
def test_a_damaged_learned_file_is_ignored(encoder, damage):
    import marshal
    import struct
    import zlib

    path = _table(encoder)
    text = _real_outputs()[0]
    first = ranktable.Subset(path)
    first.count(_clean(text))
    first.save_learned()
    learned = path + ".learned"
    blob = bytearray(open(learned, "rb").read())
    if damage == "flip":
        blob[len(blob) // 2] ^= 0x40
    elif damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "garbage":
        blob = bytearray(os.urandom(64))
    else:                                  # a valid checksum over a body that is not (ranks, segments)
        body = marshal.dumps({"ranks": 1})
        blob = bytearray(ranktable.LEARNED_MAGIC + struct.pack("<I", zlib.crc32(body)) + body)
    open(learned, "wb").write(bytes(blob))
    again = ranktable.Subset(path)
    assert again.count(_clean(text)) == _whole(encoder, text) and again.looked_at > 0     # searched afresh


def test_past_the_cap_a_process_keeps_only_what_it_searched(encoder, monkeypatch):
    path = _table(encoder)
    log, listing = _real_outputs()[0], _real_outputs()[2]
    first = ranktable.Subset(path)
    first.count(_clean(log))
    first.save_learned()
    monkeypatch.setattr(ranktable, "LEARNED_MAX_RANKS", len(first.ranks) - 256 + 10)   # the log's fit, not both
    second = ranktable.Subset(path)
    second.count(_clean(listing))
    second.save_learned()
    third = ranktable.Subset(path)
    # the file holds only what the second process searched: the listing's segments it shared with
    # the log (known to the second from the file then) are searched again, the rest are not
    every = sum(map(len, set(ranktable._BOUNDARY.split(_clean(listing).encode()))))
    assert 0 < second.looked_at < every
    assert third.count(_clean(listing)) == _whole(encoder, listing) and third.looked_at == every - second.looked_at
    searched = third.looked_at
    assert third.count(_clean(log)) == _whole(encoder, log) and third.looked_at > searched


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.lists(st.sampled_from(PIECES), max_size=60), after=st.lists(st.sampled_from(PIECES), max_size=60))
def test_with_what_others_learned_the_subset_still_counts_like_the_whole_encoder(encoder, before, after):
    path = _table(encoder)
    first = ranktable.Subset(path)
    first.count(_clean("".join(before)))
    first.save_learned()
    text = "".join(after)
    assert _subset_count(path, text) == _whole(encoder, text)


def test_ctx_run_leaves_what_it_searched_for_the_next_run(encoder, state_dir):
    """End to end: the first `ctx run` writes the learned file from its finisher; the second run,
    which searches nothing again, records the same exact counts."""
    import json

    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    git = ["git", "log", "--stat", "-n", "30"]
    raw = subprocess.run(git, capture_output=True, cwd=root, check=True).stdout.decode("utf-8", "surrogateescape")
    for _ in range(2):
        subprocess.run([sys.executable, "-m", "capsule", "ctx", "run", "--", *git], capture_output=True, env=env,
                       cwd=root, check=True)
    gain = subprocess.run([sys.executable, "-m", "capsule", "ctx", "gain", "--json", "--emissions", "2"],
                          capture_output=True, text=True, env=env, cwd=root, check=True)   # waits for the finishers
    assert list((state_dir / "cache").glob("*.ranks.learned"))
    first, second = json.loads(gain.stdout)["emissions"]
    assert first["raw_tokens"] == second["raw_tokens"] == _whole(encoder, raw)
    assert first["emitted_tokens"] == second["emitted_tokens"] < first["raw_tokens"]
