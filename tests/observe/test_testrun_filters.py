"""Test runners and linters (issue 10): source a diagnostic quotes is not the run's error, a lint
repeated at many sites shows its help text once, and every finding, location and failure stays.
Fixtures: tests/observe/fixtures/testruns/make_fixtures.sh (real pytest, ruff and cargo runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capsule.engine import Engine
from capsule.observe import keep
from capsule.ground.types import Observation

FIX = Path(__file__).parent / "fixtures" / "testruns"


def _case(name: str) -> tuple[str, str, int]:
    return ((FIX / f"{name}.out").read_text(), (FIX / f"{name}.cmd").read_text().strip(),
            int((FIX / f"{name}.exit").read_text()))


@pytest.fixture()
def observe(tmp_path):
    engine = Engine(state_dir=tmp_path / "state")

    def run(name: str) -> tuple[str, str]:
        raw, cmd, code = _case(name)
        out = engine.observe(Observation(raw.encode(), command=cmd, stream="stdout", exit_code=code)).data.decode()
        return raw, out
    return run


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.split("\n")]


def test_code_frame_source_is_quoted_and_the_labels_are_not():
    raw, _, _ = _case("ruff_full_errors_in_code")
    lines = keep.split(raw)
    quoted = {lines[i] for i in keep.quoted_source(raw, 1)}
    assert '10 |         raise ValueError("bad bytes: expected utf8")' in quoted
    assert "  - import os" in quoted                                   # the suggested fix's removed line
    assert not any(ln.lstrip().startswith(("-->", "B904", "F401", "help:")) for ln in quoted)
    assert not any(re.fullmatch(r"\s*\|[\s^]*", ln) for ln in quoted)   # caret / gutter lines: the tool's


def test_ruff_full_keeps_every_diagnostic_and_drops_source_that_names_errors(observe):
    raw, out = observe("ruff_full_errors_in_code")
    kept = _lines(out)
    for ln in raw.split("\n"):
        if re.match(r"^[A-Z]+\d+ ", ln) or ln.lstrip().startswith("--> ") or ln.startswith("Found "):
            assert ln.strip() in kept, ln
    assert 'raise ValueError("bad bytes: expected utf8")' not in out      # quoted source, not the run's error
    # (issue 29: one marker per omitted run, where it was, instead of one at the end: ~20 characters
    # more per dropped code frame)
    assert "<<ccr:" in out and len(out) < len(raw) * 0.6


def test_cargo_lint_at_many_sites_keeps_each_site_and_its_help_once(observe):
    raw, out = observe("cargo_check_repeated_lint")
    sites = re.findall(r"^\s*--> (\S+)$", raw, re.M)
    assert len(sites) >= 8
    for site in sites:
        assert f"--> {site}" in out
    headers = [ln for ln in raw.split("\n") if ln.startswith("warning:")]
    assert sum(1 for ln in out.split("\n") if ln.startswith("warning:")) == len(headers)
    for text in ("= help: consider using a Cargo feature instead",
                 "= note: see <https://doc.rust-lang.org/nightly/rustc/check-cfg/cargo-specifics.html>"):
        assert raw.count(text) == 8 and out.count(text) <= 1
    assert "= help: consider using a Cargo feature instead" in out     # the lint's advice, once
    assert "Checking gauge" not in out and "<<ccr:" in out


def test_pytest_many_failures_keep_ids_errors_and_locations_not_the_repeated_source(observe):
    raw, out = observe("pytest_many_failures")
    kept = _lines(out)
    for ln in raw.split("\n"):
        if ln.startswith(("FAILED ", "E ")) or re.match(r"^\S+\.py:\d+: \w+", ln):
            assert ln.strip() in kept, ln
    assert re.search(r"^=+ 16 failed, 15 passed", out, re.M)
    docstring = '"""The price is exactly what the expected column says, or an error is reported."""'
    assert raw.count(docstring) == 15 and docstring not in out       # test source, shown by every failure
    assert len(out) < len(raw) // 2


def test_a_suggested_config_snippet_under_help_is_quoted():
    raw, _, _ = _case("cargo_check_repeated_lint")
    lines = keep.split(raw)
    quoted = [lines[i].strip() for i in keep.quoted_source(raw, 0)]
    assert "unexpected_cfgs = { level = \"warn\", check-cfg = ['cfg(legacy_1)'] }" in quoted
    assert "[lints.rust]" in quoted
    assert not any(q.startswith(("warning:", "-->", "= help:", "= note:")) for q in quoted)


def test_mypy_advice_repeated_under_many_errors_is_shown_once(observe):
    raw, out = observe("mypy_strict_notes")
    errors = [ln for ln in raw.split("\n") if ": error:" in ln]
    assert len(errors) == 13 and all(e in out for e in errors)
    advice = 'note: Use "-> None" if function does not return a value'
    assert raw.count(advice) == 12 and out.count(advice) == 1
    assert "pkg/checks.py:1: " + advice in out                  # the first one, at its own error
    assert "Found 13 errors in 1 file" in out and "<<ccr:" in out


def test_pytest_verbose_passing_lines_become_counts_per_file_and_the_failure_stays(observe):
    raw, out = observe("pytest_v_error_ids")
    assert raw.count(" PASSED ") == 45
    assert "PASSED" not in out                      # an id saying "Error" is a name, and the test passed
    assert "tests/test_parse.py: 40 passed" in out
    assert "tests/test_skip.py: 5 passed, 1 skipped" in out
    assert "tests/test_parse.py::test_accepts FAILED" in out
    for line in ("E       AssertionError: assert 42 == 41", "tests/test_parse.py:10: AssertionError",
                 "FAILED tests/test_parse.py::test_accepts - AssertionError: assert 42 == 41"):
        assert line in out
    assert re.search(r"^=+ 1 failed, 45 passed, 1 skipped in", out, re.M)


def test_pytest_captured_output_keeps_the_same_first_lines_and_the_error_line_of_every_failure(observe):
    raw, out = observe("pytest_captured_output")
    for shard in range(12):
        assert f"___ test_sync_shard[{shard}] ___" in out
        assert f"E       AssertionError: shard {shard} did not converge" in out
        assert f"shard {shard}: ERROR record 17 rejected by the remote" in out    # an error line in the log
        assert f"shard {shard}: synced record 4" in out                          # the section's first lines
        assert f"shard {shard}: synced record 5\n" not in out and f"shard {shard}: synced record 29" not in out
    assert re.search(r"^=+ 12 failed in", out, re.M) and len(out) < len(raw) // 2


def test_pytest_tb_short_shows_a_repeated_failing_statement_and_every_failure(observe):
    raw, out = observe("pytest_tbshort_many_failures")
    statement = "    assert got == expected"
    # a statement shown in an earlier block is dropped, but each drop would need its own marker
    # (`[1 more line L123]`), which costs more tokens than the statement: it is shown each time
    assert raw.count(statement + "\n") == 15 and out.count(statement + "\n") == 15
    for ln in raw.split("\n"):
        if ln.startswith(("FAILED ", "E ")):
            assert ln in out, ln
    assert out.count("tests/test_price.py:12: in test_price") == 15        # each failure keeps its frame
    assert re.search(r"^=+ 16 failed, 15 passed", out, re.M)
