"""An over-long intent, shortened: the step's goal never costs the agent its output.

Not responsible for finding the intent (agents/intent_log.py, the doors) or using it (reflex, filters).
Invariant: deterministic and total — any text comes back at most MAX_INTENT_TOKENS tokens long:
whitespace runs become one space, and past the limit the first and the last words that fit (half
of the budget each, cut between words) are kept, joined by " … " (a thought names its goal first
and its next step last).
"""

from __future__ import annotations

from capsule.ground import tokens
from capsule.observe.transform_types import MAX_INTENT_TOKENS

JOIN = " … "


def _fit(words: list[str], budget: int, from_end: bool) -> list[str]:
    """The longest run of words from one end whose text is at most `budget` tokens (binary search)."""
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        part = words[-mid:] if from_end else words[:mid]
        if tokens.count(" ".join(part)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return words[-lo:] if from_end and lo else words[:lo] if lo else []


def shorten(intent: str | None, limit: int = MAX_INTENT_TOKENS) -> tuple[str | None, bool]:
    """(the intent to use, whether it was shortened)."""
    if intent is None or tokens.count(intent) <= limit:
        return intent, False
    words = intent.split()
    if tokens.count(" ".join(words)) <= limit:
        return " ".join(words), True
    half = (limit - tokens.count(JOIN)) // 2
    head = _fit(words, half, from_end=False)
    tail = _fit(words[len(head):], half, from_end=True)
    if not head:        # one enormous word: its first characters are the goal
        text = words[0] if words else ""
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if tokens.count(text[:mid]) <= limit else (lo, mid - 1)
        return text[:lo], True
    text = " ".join(head) + (JOIN + " ".join(tail) if tail else "")
    while tail and tokens.count(text) > limit:     # BPE pieces are not quite additive at the joins
        tail = tail[1:]
        text = " ".join(head) + (JOIN + " ".join(tail) if tail else "")
    return text, True
