"""benchmarks/bench_canary.py: the answer checks can fail, and offline it says they were not run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_canary  # noqa: E402


def _canary(name: str) -> dict:
    return next(c for c in bench_canary.canaries() if c["name"] == name)


def test_six_canaries_one_of_each_kind():
    assert [c["name"] for c in bench_canary.canaries()] == ["negation", "ordering", "exact numbers", "don't do X",
                                                            "multi-step", "caveat"]


def test_checks_pass_good_answers_and_fail_what_lost_the_requirement():
    order = _canary("ordering")
    assert bench_canary.check(order, "1. Bump the version\n2. Run the tests\n3. Tag the commit\n4. Push the tag") == []
    assert "out of order" in bench_canary.check(order, "1. Run the tests\n2. Bump\n3. Tag\n4. Push")
    nums = _canary("exact numbers")
    assert bench_canary.check(nums, "0.1875 s\n12,480 rows\n3.0e-7 m\nport 54321") == []
    assert bench_canary.check(nums, "0.19 s, 12480 rows, 3e-7 m, port 54321") == ["missing '0.1875'", "missing '12,480'",
                                                                                 "missing '3.0e-7'"]
    dont = _canary("don't do X")
    assert bench_canary.check(dont, "cat src/**/*.py | wc -l") == []
    assert bench_canary.check(dont, "find src -name '*.py' | xargs wc -l") == ["contains 'find '"]
    caveat = _canary("caveat")
    assert bench_canary.check(caveat, "git push --force; it rewrites history others pulled") == []
    assert bench_canary.check(caveat, "git push --force") != []


def test_offline_run_checks_presence_budget_stability_and_says_answers_were_not_run():
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    got = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_canary.py")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "answer checks NOT run" in got.stdout
    for kind in ("presence:", "budget:", "stability:"):
        assert kind in got.stdout
    assert "answer:" not in got.stdout and '"answers_checked": false' in got.stdout
