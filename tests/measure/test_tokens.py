"""Token counts: the library's counts exactly, and an encoding that cannot load gives estimates
labelled as such (never a silent guess)."""

from __future__ import annotations

import subprocess

import tiktoken

from capsule.ground import tokens


def _samples() -> list[str]:
    log = subprocess.run(["git", "log", "-n", "30", "--stat"], capture_output=True, text=True).stdout
    return [log, "héllo wörld ✓ 你好 \x1b[31mred\x1b[0m", "def f(x):\n    return x ** 2\n", "   \n\t\r\n", "<|endoftext|>"]


def test_counts_exactly_like_the_library(state_dir):
    library = tiktoken.get_encoding(tokens.ENCODING)
    for text in _samples():
        assert tokens.count(text) == len(library.encode_ordinary(text))
    assert tokens.label() == "cl100k_base"


def test_an_encoding_that_cannot_load_is_estimated_and_says_so(state_dir, monkeypatch):
    monkeypatch.setattr(tokens, "_encoder", None)
    monkeypatch.setattr(tokens, "_failed", False)
    monkeypatch.setattr(tokens, "ENCODING", "no_such_encoding")
    assert tokens.count("x" * 400) == 100 and tokens.label() == "approx" and tokens.is_approx()
