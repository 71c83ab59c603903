"""ctx_search cut by the task (issue 29.3): the hits the session's cues point at (a failing frame, a
failing test id, a name in the user's last prompt) come first, their lines whole; what is left out
is a count with the way to get it. A real workspace where the plain query ranks the wrong file first."""

from __future__ import annotations

import subprocess
import sys

import pytest

from capsule.engine import Engine
from capsule.ground.types import Observation, Request

PRICING = '''"""Prices of an order."""


def subtotal(items):
    return sum(i["price"] * i["qty"] for i in items)


def apply_discount(total, rate):
    """The order's total after its discount: {LONG}"""
    return total - total * rate["percent"] / 100


def tax(total):
    return total * 0.2
'''.replace("{LONG}", "rate is a fraction of the total, never a percent; " * 6)
TEST = '''from shop.pricing import apply_discount


def test_apply_discount_keeps_cents():
    assert apply_discount(10.0, 0.15) == 8.5
'''


def make_shop(root):
    """A workspace where `discount total` ranks eight campaign notes above the code that computes it."""
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "pricing.py").write_text(PRICING)
    (root / "tests").mkdir()
    (root / "tests" / "test_pricing.py").write_text(TEST)
    (root / "promo").mkdir()
    for i in range(8):           # campaign notes: the query's words, dense, in the path too
        (root / "promo" / f"discount_total_{i}.py").write_text("".join(
            f"# campaign {i}: the discount total of week {w}; discount on the total basket\nWEEK_{w} = {w}\n"
            for w in range(12)))
    return root


@pytest.fixture
def ws(tmp_path):
    return make_shop(tmp_path / "ws")


@pytest.fixture
def engine(state_dir):
    eng = Engine(state_dir=state_dir, mode="standard", scope="local")
    yield eng
    eng.close()


def search(engine, ws, query="discount total", **kw) -> list[str]:
    return engine.request(Observation(request=Request("search", ws, query, **kw))).data.decode().split("\n")


def files(rows: list[str]) -> list[str]:
    return list(dict.fromkeys(r.split(":", 1)[0] for r in rows if not r.startswith("[")))


def failing_pytest(engine, ws, scope: str) -> str:
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=ws,
                         capture_output=True, text=True)
    assert run.returncode == 1 and "test_apply_discount_keeps_cents" in run.stdout
    engine.observe(Observation(run.stdout.encode(), command="python -m pytest -q tests", exit_code=1, scope=scope))
    return run.stdout


def test_plain_query_ranks_the_campaign_notes_first(engine, ws):
    got = files(search(engine, ws, k=3))
    assert got and all(f.startswith("promo/") for f in got)


def test_a_failing_test_pulls_the_file_of_its_frame_first_with_the_line_whole(engine, ws):
    failing_pytest(engine, ws, "s1")
    rows = search(engine, ws, k=3, scope="s1")
    assert files(rows)[:2] == ["shop/pricing.py", "tests/test_pricing.py"]
    line = 'return total - total * rate["percent"] / 100'
    assert f"shop/pricing.py:10:{line}" in rows
    doc = next(r for r in rows if r.startswith("shop/pricing.py:9:"))
    assert doc.endswith(PRICING.split("\n")[8].strip())     # the pointed line whole, past the snippet's 160 chars
    assert len(doc) > 200
    assert rows[-1].startswith("[") and "more files matched" in rows[-1] and "larger k" in rows[-1]


def test_a_name_in_the_users_prompt_pulls_its_definition_first(engine, ws):
    rows = search(engine, ws, k=3, scope="p1", prompt="the total after `apply_discount` is wrong for 15%")
    assert files(rows)[0] == "shop/pricing.py"
    assert "shop/pricing.py:8:def apply_discount(total, rate):" in rows
    # the query's lines inside the definition the prompt names, not only the file's best two
    assert 'shop/pricing.py:10:return total - total * rate["percent"] / 100' in rows
    assert not any(r.startswith("shop/pricing.py:13:") for r in rows)       # tax(): another definition
    assert len([f for f in files(rows)]) == 3      # k is still the number of files


def test_the_cues_never_push_the_answer_over_its_budget_and_one_row_is_written(engine, ws, state_dir):
    from capsule.ground.tokens import count
    from capsule.measure.ledger import Ledger

    failing_pytest(engine, ws, "s2")
    before = len(Ledger().rows())
    text = "\n".join(search(engine, ws, k=50, scope="s2"))
    assert count(text) <= 800 and text.startswith("shop/pricing.py:")
    assert len(Ledger().rows()) == before + 1


def test_same_search_same_cues_same_bytes(engine, ws):
    kw = {"k": 4, "scope": "p2", "prompt": "look at `apply_discount`"}
    assert search(engine, ws, **kw) == search(engine, ws, **kw)


def test_a_failing_task_cut_serves_the_plain_search(engine, ws, monkeypatch):
    from capsule.retrieve import packer

    plain = search(engine, ws, k=3)

    def broken(*a, **kw):
        raise RuntimeError("injected")

    monkeypatch.setattr(packer, "_pack_by_task", broken)
    assert search(engine, ws, k=3, scope="p3", prompt="look at `apply_discount`") == plain
