"""The six failures peers' users reported, each made impossible and shown end to end.

Inputs are real tool outputs (tests/observe/fixtures/shell, made by make_fixtures.sh) run
through the real Engine, the same path `capsule ctx run` takes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capsule.engine import Engine
from capsule.observe.filters.filter_engine import apply
from capsule.observe.guard import MARKER_RE
from capsule.observe.transform_types import Context
from capsule.ground.types import Observation

FIXTURES = Path(__file__).parent / "fixtures" / "shell"


def fixture(name: str) -> tuple[str, bytes, int]:
    return ((FIXTURES / f"{name}.cmd").read_text().strip(), (FIXTURES / f"{name}.out").read_bytes(),
            int((FIXTURES / f"{name}.exit").read_text()))


@pytest.fixture
def engine(tmp_path):
    return Engine(tmp_path / "state", mode="standard", scope="test")


def emitted(engine, raw: bytes, command: str, exit_code: int) -> str:
    return engine.observe(Observation(raw, command=command, exit_code=exit_code)).data.decode("utf-8", "surrogateescape")


def test_1_empty_porcelain_status_is_never_shown_as_ok(engine):
    command, raw, code = fixture("git_status_porcelain_clean")
    assert raw == b""
    out = emitted(engine, raw, command, code)
    assert "ok" not in out.lower()
    assert out.strip() == ""
    # and the filter alone keeps it empty too
    assert apply("", Context(command=command, filter_id="git_status_porcelain", exit_code=0)).text == ""


def test_2_a_diff_is_never_reported_identical_when_the_exit_code_says_they_differ(engine):
    command, raw, code = fixture("diff_differs")
    assert code == 1
    out = emitted(engine, raw, command, code)
    assert "identical" not in out
    assert "< b" in out and "> c" in out
    # even an empty output with exit 1 (e.g. diff -q on some systems) is not called identical
    assert "identical" not in apply("", Context(command="diff a b", filter_id="diff", exit_code=1)).text
    same_cmd, same_raw, same_code = fixture("diff_same")
    assert same_code == 0 and same_raw == b""
    assert apply("", Context(command=same_cmd, filter_id="diff", exit_code=0)).text == "files are identical\n"


def test_3_an_import_error_is_never_reported_as_no_tests_collected(engine):
    command, raw, code = fixture("pytest_collection_error")
    assert code == 2
    out = emitted(engine, raw, command, code)
    assert "ModuleNotFoundError: No module named 'nothere'" in out
    assert "ERROR tests/test_broken.py" in out
    assert "no tests" not in out.lower()


def test_4_a_long_diff_is_never_truncated_without_a_marker(engine):
    command, raw, code = fixture("git_diff_long")
    text = raw.decode()
    result = apply(text, Context(command=command, filter_id="git_diff", exit_code=code))
    markers = [l for l in result.text.splitlines() if MARKER_RE.match(l)]
    assert len(markers) == 1
    n = int(MARKER_RE.match(markers[0]).group(1))
    assert n == result.removed_lines > 0
    out = emitted(engine, raw, command, code)
    assert sum(1 for l in out.splitlines() if MARKER_RE.match(l)) == 1
    assert "[full output: capsule ctx expand '<<ccr:" in out


def test_5_a_five_file_ls_la_is_not_mangled(engine):
    command, raw, code = fixture("ls_la_five")
    out = emitted(engine, raw, command, code)
    entries = [l for l in raw.decode().splitlines() if l.endswith((".py", "src"))]
    assert len(entries) == 6
    for line in entries:           # every entry survives byte-exact: permissions, size, date, name
        assert line in out.splitlines()


def test_6_a_grep_whose_only_match_is_one_line_keeps_it(engine):
    command, raw, code = fixture("grep_single")
    line = raw.decode().strip()
    assert "\n" not in line
    assert line in emitted(engine, raw, command, code)
    assert apply(raw.decode(), Context(command=command, filter_id="grep", exit_code=0)).text.strip() == line
