"""A long text counts as the sum of its segments (tokens.segments: cut after a newline a printable
character follows), each distinct segment encoded once a process: exactly the whole encoder's count,
on generated text built from what the pre-tokenizer treats specially and on real tool output."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from capsule.ground import tokens

PIECES = list("aZ09'sStT ,.;:!?-_/\\|+*=<>()[]{}\"#$%&@^`~\t\n\r\x0b\x0c\x1c\x1f\x00\x7f") + [
    "\x85", "\xa0", "\u2028", "\u3000", "²", "١", "é", "你", "🙂", "\u0301", "’", "\ufffd",
    "  ", "    ", "\n\n", "\r\n", "\n ", "\n\t", " \n", "'s", "'ll", "123", "4567", " the", "++++", "----",
    "\n'", "\n1", "\n-", "\nA", "\n\n\n  x", "\x1b[31m", "0x7f3a"]


@pytest.fixture
def core(state_dir, monkeypatch):
    monkeypatch.setattr(tokens, "_segment_counts", {})
    monkeypatch.setattr(tokens, "_segment_chars", 0)
    return tokens._load()


def _whole(text: str) -> int:
    return len(tokens._load().encode_ordinary(text))


@settings(max_examples=1500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(st.sampled_from(PIECES), max_size=80), second=st.lists(st.sampled_from(PIECES), max_size=80))
def test_the_sum_of_the_segments_is_the_whole_count(core, first, second):
    for remember in (True, False):
        for text in ("".join(first), "".join(second), "".join(first + second)):   # the cache carries over
            assert "".join(tokens.segments(text)) == text
            assert tokens._count_by_segments(core, text, remember) == _whole(text), repr(text)


def test_real_outputs_count_alike_and_the_second_count_reuses_the_first(core, monkeypatch):
    runs = [["git", "log", "--stat", "--no-merges", "-n", "80"], ["git", "log", "-p", "--no-merges", "-n", "20"], ["ls", "-la", "/usr/bin"],
            [sys.executable, "-c", "print(''.join(map(chr, range(1, 3000))) * 8)"]]
    for argv in runs:
        text = subprocess.run(argv, capture_output=True).stdout.decode("utf-8", "replace")
        assert len(text) > tokens.SEGMENTED_FROM
        assert tokens.count(text, remember=True) == _whole(text)
        encoded = []
        real = tokens._encoded_len
        monkeypatch.setattr(tokens, "_encoded_len", lambda c, t: encoded.append(t) or real(c, t))
        kept = "".join(seg for i, seg in enumerate(tokens.segments(text)) if i % 10)    # an emission of it
        assert tokens.count(kept) == _whole(kept)
        assert len(encoded) <= 2               # its segments were all counted before (but where it was cut)
        monkeypatch.setattr(tokens, "_encoded_len", real)


def test_a_count_that_does_not_remember_encodes_its_unknown_segments_in_one_call(core, monkeypatch):
    text = "".join(f"line {i} of a log\n" for i in range(3000))
    tokens.count(text[: len(text) // 2], remember=True)
    encoded = []
    real = tokens._encoded_len
    monkeypatch.setattr(tokens, "_encoded_len", lambda c, t: encoded.append(t) or real(c, t))
    assert tokens.count(text) == _whole(text)
    assert len(encoded) == 1 and len(encoded[0]) <= len(text) // 2 + 30      # only the second half, once
    assert len(tokens._segment_counts) < 1600                                   # and nothing more kept


def test_the_cache_starts_over_past_its_size(core, monkeypatch):
    monkeypatch.setattr(tokens, "SEGMENT_CACHE_CHARS", 1000)
    text = "".join(f"line {i} of a log\n" for i in range(5000))
    assert tokens.count(text, remember=True) == _whole(text)
    assert tokens._segment_chars <= 1000 + 40 and len(tokens._segment_counts) < 100


def test_unknown_segments_are_encoded_a_chunk_at_a_time(core, monkeypatch):
    """A long text nobody remembered is encoded in chunks of whole segments (a list of ints per
    chunk, not per text), and the chunks' counts sum to the whole count."""
    monkeypatch.setattr(tokens, "CHUNK_CHARS", 2000)
    text = "".join(f"line {i}: déjà vu, {i * 7919} items\n  indented {i}\n" for i in range(3000))
    encoded = []
    real = tokens._encoded_len
    monkeypatch.setattr(tokens, "_encoded_len", lambda c, t: encoded.append(t) or real(c, t))
    assert tokens.count(text) == _whole(text)
    assert len(encoded) > len(text) // 2000 - 2 and max(map(len, encoded)) < 2000 + 100
