"""Built-in filters on real tool outputs (fixtures made by fixtures/shell/make_fixtures.sh).

For each fixture: the classifier picks the filter from the command line, the filter keeps
every verbatim-class line and the result lines named here, and never grows the text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capsule.observe.classify import classify_command
from capsule.observe.filters.filter_engine import apply
from capsule.observe.transform_types import Context
from capsule.observe.verbatim import missing_verbatim

FIXTURES = Path(__file__).parent / "fixtures" / "shell"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.cmd"))

# fixture -> (filter the classifier must choose, lines that must survive, minimum saving in chars %)
EXPECT = {
    "cargo_build_error": ("cargo_build", ["error[E0308]: mismatched types", "--> src/lib.rs:2:18"], 20),
    "cargo_build_warning": ("cargo_build", ["warning: unused variable: `unused`", "--> src/lib.rs:2:9"], 20),
    "cargo_test_failure": ("cargo_test", ["test tests::adds_wrong ... FAILED", "left: 4", "right: 5", "test result: FAILED."], 20),
    "diff_differs": ("diff", ["< b", "> c"], 0),
    "diff_same": ("diff", [], 0),
    "docker_build_fail": ("docker_build", ["Step 3/3 :", "returned a non-zero code: 3", "boom"], 30),
    "docker_build_ok": ("docker_build", ["Successfully built", "Successfully tagged capsule-fixture:ok"], 70),
    "docker_images": ("docker_table", ["REPOSITORY"], 0),
    "kubectl_no_cluster": ("kubectl_get", ["The connection to the server 127.0.0.1:9 was refused"], 0),
    "find_py": ("find", ["./a.py", "./src/export.py"], 0),
    "gcc_error": ("gcc", ["error: ‘undefined_thing’ undeclared"], 20),
    "git_blame": ("git_blame", ["RATE = 16"], 20),
    "git_branch": ("git_branch", ["* main"], 0),
    # (a 13-line diff: its index line's marker `[1 more line L2]` saves 13 of 165 characters)
    "git_diff": ("git_diff", ["-RATE = 16", "+RATE = 17", "diff --git a/tax.py b/tax.py", "[1 more line L2]"], 5),
    "git_diff_long": ("git_diff", ["diff --git a/big.py b/big.py", "-VALUE_0 = 0", "[1281 more lines L525-1805]"], 20),
    "git_log": ("git_log", ["notes: add note 6", "tax: first rate"], 30),
    "git_log_p": ("git_diff", ["notes: add note 6", "+# note 6"], 10),
    "git_status_dirty": ("git_status", ["modified:   tax.py", "extra.txt"], 20),
    "git_status_porcelain_clean": ("git_status_porcelain", [], 0),
    "git_status_porcelain_dirty": ("git_status_porcelain", [" M tax.py", "?? extra.txt"], 0),
    "grep_none": ("grep", [], 0),
    "grep_single": ("grep", ["./src/export.py:1:def render_pdf(): pass"], 0),
    "ls_la_five": ("ls", ["a.py", "e.py", "src"], 0),
    "make_error": ("make", ["error: ‘undefined_thing’ undeclared", "make: ***"], 20),
    "node_typeerror": ("node_run", ["TypeError: Cannot read properties of undefined (reading 'port')", "app.js:3"], 20),
    "npm_run_build": ("js_script", ["built 3 files"], 30),
    "pytest_collection_error": ("pytest", ["E   ModuleNotFoundError: No module named 'nothere'", "ERROR tests/test_broken.py"], 30),
    "pytest_failure": ("pytest", ["E       assert 4 == 2", "FAILED tests/test_calc.py::test_sub", "1 failed, 30 passed"], 40),
    "pytest_pass": ("pytest", ["31 passed"], 60),
    "pytest_q_failure": ("pytest", ["E       assert 4 == 2", "FAILED tests/test_calc.py::test_sub"], 30),
    "pytest_v_pass": ("pytest", ["31 passed"], 85),
    "python_log": ("python_run", ["ERROR worker: failed to render invoice 317", "INFO worker: done: 399 rendered, 1 failed"], 85),
    # (the recursion block's marker names its range and the block's templates: 33% of 580 characters)
    "python_recursion": ("python_run", ["RecursionError: maximum recursion depth exceeded", 'recurse.py", line 5, in <module>',
                                        "[5 more lines L8-12 like "], 30),
    "python_traceback": ("python_run", ["json.decoder.JSONDecodeError", 'badjson.py", line 4, in <module>', "loading"], 10),
    "unittest_failure": ("unittest", ["FAIL: test_bad", "AssertionError: 2 != 3", "FAILED (failures=1)"], 30),
}


def load(name: str) -> tuple[str, str, int]:
    return ((FIXTURES / f"{name}.cmd").read_text().strip(),
            (FIXTURES / f"{name}.out").read_bytes().decode("utf-8", "surrogateescape"),
            int((FIXTURES / f"{name}.exit").read_text()))


def test_every_fixture_has_expectations():
    assert sorted(EXPECT) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_fixture(name):
    command, text, code = load(name)
    filter_id, keep, saving = EXPECT[name]
    found = classify_command(command.replace("/work/main/.venv/bin/python", "python"))
    assert found is not None and found.filter_id == filter_id, found
    result = apply(text, Context(command=command, family=found.family, exit_code=code, filter_id=filter_id))
    assert missing_verbatim(text, result.text) == []
    assert len(result.text) <= len(text) or (not text and code == 0)   # on_empty may name an empty result
    for line in keep:
        assert line in result.text, (line, result.text)
    if saving:
        assert len(result.text) <= len(text) * (100 - saving) / 100, (len(result.text), len(text))
    assert result.removed_lines == sum(r.count for r in result.removals)
