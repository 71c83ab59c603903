"""What capsule.ground.tokens and ranktable take from tiktoken beyond its public API, checked by
name: a tiktoken release that renames or drops one fails here, loudly, instead of every count
quietly falling back to an estimate (issue 23: private fields isolated, a test that names them)."""

from __future__ import annotations

import importlib.metadata

import tiktoken

from capsule.ground import tokens

PRIVATE_ENCODING_FIELDS = ("_mergeable_ranks", "_pat_str", "_special_tokens", "_core_bpe")


def test_the_private_tiktoken_fields_capsule_reads_still_exist():
    enc = tiktoken.get_encoding(tokens.ENCODING)
    missing = [name for name in PRIVATE_ENCODING_FIELDS if not hasattr(enc, name)]
    version = importlib.metadata.version("tiktoken")
    assert not missing, (f"tiktoken {version} has no {missing} on Encoding; capsule/ground/tokens.py and "
                         f"ranktable.py read them: pin tiktoken or move them to the public API")
    assert isinstance(enc._mergeable_ranks, dict) and isinstance(enc._pat_str, str)
    from tiktoken import _tiktoken   # the Rust core ranktable.py loads directly

    assert hasattr(_tiktoken, "CoreBPE"), f"tiktoken {version}: _tiktoken.CoreBPE is gone (ranktable.py builds one)"


def test_counts_through_them_equal_the_public_encode():
    enc = tiktoken.get_encoding(tokens.ENCODING)
    text = "def f(x):\n    return x  # ünïcode, numbers 12345 and  spaces\n" * 50
    assert tokens.count(text) == len(enc.encode_ordinary(text))
    assert tokens.label() == tokens.LABEL_EXACT
