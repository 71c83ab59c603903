"""The task's cues (observe/cues.py): what the prompt, the intent, the commands and the edits name,
deterministic, and one BM25 ranking for reads and searches."""

from __future__ import annotations

from capsule.observe import cues


def test_the_prompt_names_quoted_names_calls_and_identifiers_but_not_files():
    got = cues.said_in("the refund is wrong: see `Cart.apply_discount`, parse(x) and settle_ledger in `pay.py`")
    assert got == ["apply_discount", "settle_ledger", "apply_discount", "parse"]


def test_edits_name_their_path_and_what_they_define():
    names, paths = cues.edited_in("/w/shop/cart.py\ndef cart_total(items):\n    return sumPrices(items)")
    assert paths == ["/w/shop/cart.py"] and names[:1] == ["cart_total"] and "sumPrices" in names


def test_same_inputs_same_cues_in_the_order_said():
    args = ("why is apply_discount wrong", ["test_refund"], ["rg -n settle_ledger src"], [3])
    kw = dict(prompt="look at `Cart.total` please", edits=["/w/a.py\ndef fix_it():"], frames=[("a.py", 3)])
    a, b = cues.cues(*args, **kw), cues.cues(*args, **kw)
    assert a == b
    assert a.names[:4] == ("apply_discount", "total", "test_refund", "settle_ledger") and "fix_it" in a.names
    assert a.paths == ("/w/a.py",) and a.frames == (("a.py", 3),) and "why" not in a.terms


def test_one_ranking_best_first_and_nothing_without_terms():
    texts = ["def refund(order):\n    charge(order)", "def apply_discount(order, rate):\n    return rate",
             "def settle():\n    pass"]
    cue = cues.cues("the discount rate", [], [])
    assert cues.rank(texts, cue)[0] == 1
    assert cues.rank(texts, cues.NONE) == [] and cues.empty(cues.NONE)
