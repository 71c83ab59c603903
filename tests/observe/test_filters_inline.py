"""Every inline test of every built-in filter file runs here, plus the DSL's own contracts."""

from __future__ import annotations

import pytest

from capsule.observe.filters.filter_engine import builtin_filters, run_filter
from capsule.observe.filters.spec import FilterError, parse_file
from capsule.observe.filters.stages import run_stages
from capsule.observe.guard import MARKER_RE

FILTERS = builtin_filters()
CASES = [(name, t) for name, spec in sorted(FILTERS.items()) for t in spec.tests]


@pytest.mark.parametrize("name,case", CASES, ids=[f"{n}:{t.name}" for n, t in CASES])
def test_inline(name, case):
    out, removals, _ = run_filter(FILTERS[name], case.input, case.exit_code, case.command)
    assert out == case.expected
    # every dropped line is accounted for by a removal with a reason
    assert all(r.reason and r.count >= 1 for r in removals)


def test_there_are_many_filters_each_with_success_failure_and_unless_cases():
    assert len(FILTERS) >= 60
    for name, spec in FILTERS.items():
        assert len(spec.tests) >= 3, name
        assert any("unless" in t.name for t in spec.tests), f"{name} has no unless case"
        assert spec.description, name


def test_every_summary_carries_an_unless_guard():
    for name, spec in FILTERS.items():
        if spec.summary is not None:
            assert spec.summary.unless is not None, name


def test_summary_without_unless_is_refused():
    bad = b'[filters.x]\nsummary = { when = "ok", text = "fine" }\n'
    with pytest.raises(FilterError, match="unless"):
        parse_file(bad, "bad.toml")


def test_unknown_key_is_named_with_the_file():
    with pytest.raises(FilterError, match=r"bad\.toml.*'turbo'"):
        parse_file(b'[filters.x]\nturbo = true\n', "bad.toml")


def test_bad_regex_names_the_key():
    with pytest.raises(FilterError, match=r"strip_lines\[0\]"):
        parse_file(b"[filters.x]\nstrip_lines = ['(']\n", "bad.toml")


def _spec(toml: str):
    return parse_file(toml.encode(), "t.toml")["t"]


def test_stage_order_ansi_then_replace_then_strip():
    spec = _spec("[filters.t]\nreplace = [{ pattern = '^DEBUG', with = 'noise' }]\nstrip_lines = ['^noise']\n")
    out, removals, _ = run_stages(spec, "\x1b[31mDEBUG\x1b[0m x\nkept\n", 0)
    assert out == "kept\n"
    assert removals[0].start == 1 and removals[0].count == 1


def test_summary_never_fires_on_nonzero_exit_or_verbatim_lines():
    spec = _spec("[filters.t]\nsummary = { when = 'passed', unless = 'FAILED', text = 'all good' }\n")
    assert run_stages(spec, "3 passed\nx\n", 0)[0] == "all good\n"
    assert run_stages(spec, "3 passed\nx\n", 1)[0] == "3 passed\nx\n"          # exit code says otherwise
    assert run_stages(spec, "3 passed\nerror: disk\n", 0)[0] == "3 passed\nerror: disk\n"  # verbatim line
    assert run_stages(spec, "3 passed\nFAILED t\n", 0)[0] == "3 passed\nFAILED t\n"      # unless


def test_truncation_places_exactly_one_marker_with_the_true_count():
    spec = _spec("[filters.t]\nmax_lines = 10\n")
    text = "".join(f"line {i}\n" for i in range(100))
    out, removals, _ = run_stages(spec, text, 0)
    lines = out.splitlines()
    markers = [l for l in lines if MARKER_RE.match(l)]
    assert markers == ["[90 more lines]"]
    assert len(lines) - 1 + 90 == 100
    assert sum(r.count for r in removals) == 90


def test_truncation_keeps_error_lines_from_the_cut_region():
    spec = _spec("[filters.t]\nhead = 2\ntail = 2\n")
    text = "".join(f"line {i}\n" for i in range(20)).replace("line 9\n", "error: line 9 broke\n")
    out = run_stages(spec, text, 0)[0]
    assert "error: line 9 broke" in out


def test_collapse_repeats_counts():
    spec = _spec("[filters.t]\ncollapse_repeats = true\n")
    out, removals, _ = run_stages(spec, "a\nb\nb\nb\nb\nc\n", 0)
    assert out == "a\nb (x4)\nc\n"
    assert removals[0].count == 3


def test_on_empty_only_for_truly_empty_output_and_clean_exit():
    spec = _spec("[filters.t]\non_empty = 'nothing'\n")
    assert run_stages(spec, "", 0)[0] == "nothing\n"
    assert run_stages(spec, "", 1)[0] == ""


def test_the_documented_example_filter_parses_and_passes_its_own_tests():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "filters.md").read_text()
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    specs = parse_file(example.encode(), "docs/filters.md")
    spec = specs["acme_deploy"]
    assert spec.match[0].search("acme deploy prod")
    for case in spec.tests:
        assert run_filter(spec, case.input, case.exit_code)[0] == case.expected


def test_a_failed_run_is_never_emptied():
    spec = _spec("[filters.t]\nkeep_lines = ['^RESULT']\n")
    text = "".join(f"step {i}\n" for i in range(30))
    out, removals, _ = run_stages(spec, text, 3)
    assert out.splitlines() == ["[20 more lines]"] + [f"step {i}" for i in range(20, 30)]
    assert removals[0].count == 20
    assert run_stages(spec, text, 0)[0] == ""     # a clean run may say nothing


@pytest.mark.parametrize("name,case", CASES, ids=[f"{n}:{t.name}" for n, t in CASES])
def test_inline_cases_keep_every_error_line(name, case):
    from capsule.observe.keep import missing     # the pipeline's guard: source a tool quotes is not an error line

    out, _, _ = run_filter(FILTERS[name], case.input, case.exit_code, case.command)
    assert missing(case.input, out, case.exit_code) == []


def test_a_filter_loaded_alone_is_the_filter_of_the_whole_set(monkeypatch):
    """get_filter parses only the file that defines the filter (cold `ctx run`): same spec either way."""
    from capsule.observe.filters import filter_engine as filter_engine

    whole = filter_engine.builtin_filters()
    for name, spec in whole.items():
        monkeypatch.setattr(filter_engine, "_builtin", None)
        monkeypatch.setattr(filter_engine, "_parsed_files", {})
        monkeypatch.setattr(filter_engine, "_file_bytes", {})
        assert filter_engine.get_filter(name) == spec, name
        assert filter_engine._builtin is None            # found without parsing every file
    monkeypatch.setattr(filter_engine, "_builtin", None)
    assert filter_engine.get_filter("no_such_filter") is None
