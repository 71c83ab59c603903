"""Token counts: the cached rank table gives the library's counts exactly, and a damaged cache
is rebuilt rather than trusted."""

from __future__ import annotations

import subprocess

from capsule.ground import tokens


def _samples() -> list[str]:
    log = subprocess.run(["git", "log", "-n", "30", "--stat"], capture_output=True, text=True).stdout
    return [log, "héllo wörld ✓ 你好 \x1b[31mred\x1b[0m", "def f(x):\n    return x ** 2\n", "   \n\t\r\n", "<|endoftext|>"]


def test_cached_encoder_counts_exactly_like_the_library(state_dir, monkeypatch):
    monkeypatch.setattr(tokens, "_encoder", None)
    monkeypatch.setattr(tokens, "_subset", None)
    library = tokens._from_library()          # also writes the cache
    assert tokens._cache_path().exists()
    cached = tokens._from_cache()
    assert cached is not None
    for text in _samples():
        assert cached.encode_ordinary(text) == library.encode_ordinary(text)


def test_damaged_cache_is_ignored(state_dir, monkeypatch):
    monkeypatch.setattr(tokens, "_encoder", None)
    monkeypatch.setattr(tokens, "_subset", None)
    monkeypatch.setattr(tokens, "_failed", False)
    path = tokens._cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a marshal file")
    assert tokens._from_cache() is None
    assert tokens.count("hello world") == 2 and tokens.label() == "cl100k_base"
    assert tokens._from_cache() is not None     # rebuilt by the library path
