"""An over-long intent is shortened, deterministically, to at most MAX_INTENT_TOKENS (issue 25)."""

from __future__ import annotations

import subprocess

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.observe.intent import shorten
from capsule.observe.transform_types import MAX_INTENT_TOKENS
from capsule.ground.types import Observation


def test_shorten_keeps_head_and_tail_within_the_limit():
    thought = "Look at refund_half first. " + "Then think about the imports of every module. " * 40 + "Edit billing.py."
    short, cut = shorten(thought)
    assert cut and tokens.count(short) <= MAX_INTENT_TOKENS
    assert short.startswith("Look at refund_half first.") and short.endswith("Edit billing.py.") and " … " in short
    assert shorten(thought) == (short, cut)
    assert shorten("fix the bug") == ("fix the bug", False)
    one_word, cut = shorten("x" * 5000)
    assert cut and tokens.count(one_word) <= MAX_INTENT_TOKENS and one_word


def test_engine_observes_with_an_overlong_intent_from_any_door(tmp_path):
    # The shims and the proxy hand the engine whatever the agent thought; it never fails for it.
    log = subprocess.run(["git", "log", "-n", "80", "--stat"], capture_output=True).stdout
    eng = Engine(tmp_path, mode="standard", scope="t")
    plain = eng.observe(Observation(log, command="git log --stat"))
    long = eng.observe(Observation(log, command="git log --stat", intent="why " * 400))
    assert long.emission_id is not None and long.data
    row = eng.ledger.get(long.emission_id)
    assert tokens.count(row["intent"]) <= MAX_INTENT_TOKENS
    assert len(long.data) <= len(log) and plain.data
