"""capsule counts tokens through tiktoken's public API only (issue 32: the rank table over its
private fields is gone): no private name of tiktoken is read anywhere in capsule/, and the counts
are the library's own."""

from __future__ import annotations

import re
from pathlib import Path

import tiktoken

from capsule.ground import tokens

PACKAGE = Path(tokens.__file__).resolve().parents[1]
PRIVATE = re.compile(r"\b(_mergeable_ranks|_pat_str|_special_tokens|_core_bpe|_tiktoken|encode_to_tiktoken_buffer)\b")


def test_no_private_tiktoken_name_is_read():
    found = [f"{p.relative_to(PACKAGE.parent)}:{n}" for p in PACKAGE.rglob("*.py")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if PRIVATE.search(line)]
    assert not found, f"tiktoken's private names read (use its public API): {found}"


def test_counts_equal_the_public_encode():
    enc = tiktoken.get_encoding(tokens.ENCODING)
    text = "def f(x):\n    return x  # ünïcode, numbers 12345 and  spaces\n" * 50
    assert tokens.count(text) == len(enc.encode_ordinary(text))
    assert tokens.count(text * 40, remember=True) == len(enc.encode_ordinary(text * 40))   # by segments
    assert tokens.label() == tokens.LABEL_EXACT
