"""Test lists fold by template (issue 25, rule 4): `pytest --collect-only` of a suite with 300
parametrized cases and 40 numbered ones shows each run as one count line with its template and
range, and the test that breaks the template (the one a failure named) stays, wherever it is.
The listing is made at test time by the real pytest."""

from __future__ import annotations

import subprocess
import sys

import pytest

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.ground.types import Observation

ODD = "test_refund_half_of_an_even_total"


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite")
    body = ["import pytest", ""]
    for i in range(40):
        body += [f"def test_price_case_{i:02d}():", "    pass", ""]
        if i == 23:
            body += [f"def {ODD}():", "    pass", ""]
    body += ["@pytest.mark.parametrize('quantity', range(1, 301))",
             "def test_small_orders_have_no_discount(quantity):", "    pass", ""]
    (root / "test_prices.py").write_text("\n".join(body))
    return root


@pytest.mark.parametrize("flags", [["-q"], []], ids=["ids", "tree"])
def test_collect_only_folds_runs_and_keeps_the_test_that_differs(suite, tmp_path, flags):
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", *flags]
    raw = subprocess.run(cmd, cwd=suite, capture_output=True, text=True).stdout
    assert ODD in raw and "341 tests collected" in raw
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(
        Observation(raw.encode(), command="pytest --collect-only " + " ".join(flags), exit_code=0)).data.decode()
    assert ODD in out, out
    assert "341 tests collected" in out
    # the run folds to its first line and one marker naming its template and what varied (issue 29's
    # marker contract: the marker speaks of the lines it stands for, [2]..[300])
    assert "test_prices.py::test_small_orders_have_no_discount[1]" in out.splitlines() or "-q" not in flags, out
    assert any("2…300" in ln and "test_small_orders_have_no_discount" in ln and "more lines" in ln
               for ln in out.splitlines()) or any("1…300" in ln and "test_small_orders_have_no_discount" in ln
                                                  for ln in out.splitlines()), out
    assert tokens.count(out) < tokens.count(raw) // 5, out


def test_an_id_whose_number_is_sometimes_a_word_still_folds(tmp_path):
    # `[EUR]` where the other ids hold `[<N>]`: the slot is a word slot (this raised int('EUR')
    # and the listing passed raw)
    (tmp_path / "test_amounts.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('amount', [*range(1, 301), 'EUR'])\n"
        "def test_amount(amount):\n    pass\n")
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    raw = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True).stdout
    assert "test_amount[EUR]" in raw and "301 tests collected" in raw
    result = Engine(tmp_path / "st", mode="standard", scope="t").observe(
        Observation(raw.encode(), command="pytest --collect-only -q", exit_code=0))
    out = result.data.decode()
    assert not result.warnings, result.warnings
    assert "301 tests collected" in out and tokens.count(out) < tokens.count(raw) // 5, out
