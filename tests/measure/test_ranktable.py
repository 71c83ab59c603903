"""The rank subset counts exactly like the whole cl100k encoder, on real tool output and on
generated text built from the characters the pre-tokenizer treats specially; a damaged table
is rebuilt, never trusted; a short-lived process counts a small text without the whole encoder."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from capsule.measure import ranktable, tokens

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
    code = ("import subprocess\nfrom capsule.measure import tokens\n"
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
