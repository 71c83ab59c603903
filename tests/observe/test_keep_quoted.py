"""Quoted text is not the run's error: a commit message that talks about a panic must not make a
`git log` pass raw (it did: one such commit anywhere in 40 turned the whole emission raw)."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import example, given, settings, strategies as st

from capsule.engine import Engine
from capsule.observe import digits, keep
from capsule.ground.types import Observation

MESSAGE = ("parser: fix the panic on empty input\n\nThe old code raised an error: IndexError when the list "
           "was empty.\nTraceback showed the failure in parse().\n")


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    for i in range(1, 46):
        (repo / f"f{i % 7}.txt").write_text(f"{i}\n")
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
        msg = MESSAGE if i == 20 else f"change {i}: adjust the widget pipeline"
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", msg], check=True, env=env)
    return repo, env


def _git(history, *args) -> bytes:
    repo, env = history
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env).stdout


def test_commit_message_lines_are_quoted_text(history):
    lines = keep.split(_git(history, "log", "-n", "30").decode())
    quoted = keep.quoted(lines)
    said = [lines[i] for i in quoted]
    assert "    The old code raised an error: IndexError when the list was empty." in said
    assert all(ln.startswith("    ") for ln in said)
    assert not any(ln.startswith(("commit ", "Author:", "Date:")) for ln in said)


@pytest.mark.parametrize("args", [["log", "--stat", "-n", "40"], ["log", "-n", "40"]])
def test_a_log_with_an_error_word_in_one_message_is_still_compressed(history, tmp_path, args):
    raw = _git(history, *args)
    out = Engine(state_dir=tmp_path / "state").observe(Observation(raw, command="git " + " ".join(args), stream="stdout",
                                                       exit_code=0)).data
    assert b"<<ccr:" in out and len(out) < len(raw)
    assert b"parser: fix the panic on empty input" in out    # the subject of that commit survives


def test_a_real_error_line_outside_a_message_is_still_kept(history, tmp_path):
    raw = _git(history, "log", "--stat", "-n", "40") + b"fatal: bad object refs/heads/gone\n"
    out = Engine(state_dir=tmp_path / "state").observe(Observation(raw, command="git log --stat -n 40", stream="stdout",
                                                       exit_code=128)).data
    assert b"fatal: bad object refs/heads/gone" in out


def test_a_bare_name_in_a_tree_drawing_is_quoted_but_a_tree_error_is_not(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_FileError.py").write_text("")
    (tmp_path / "locked").mkdir(mode=0)
    out = subprocess.run(["tree", "-a", "tests", "nope"], cwd=tmp_path, capture_output=True, text=True,
                         env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    lines = (out.stdout + out.stderr).split("\n")
    entry = next(i for i, ln in enumerate(lines) if ln.endswith("── test_FileError.py"))
    error = next(i for i, ln in enumerate(lines) if "[error opening dir]" in ln)
    protected = keep.protected("\n".join(lines), out.returncode)
    assert entry not in protected and error in protected


QUOTING = ["@@ -1,2 +1,3 @@ def f():", "+    raise ValueError(1)", "-    x = 2", " ctx", "commit 0123abc", "Author: A",
           "    fix the panic 3", " src/a.py | 12 ++--", "├── error-ex@1.3.2", "  --> src/main.rs:3:5", "   |",
           "12 |     let x = 1;", "  = help: add this:", "        serde = 1", "=== FAILURES ===", "____ test_x ____",
           "    assert f(2) == 3", "E   assert 4 == 3", "PASSED tests/t.py::test_y", "   Running `rustc --error-format=json`",
           "error[E0308]: mismatched types", "INFO 12:00 served", ""]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(lines=st.lists(st.sampled_from(QUOTING), max_size=40))
@example(lines=["INFO 1", "=== FAILURES ===", "____ test_x ____", "    assert f(2) == 3", "E   assert 4 == 3"])
@example(lines=["commit 0123abc", "Author: A", "", "    fix the panic 3"])
@example(lines=["x", "@@ -1,2 +1,3 @@ def f():", "+    raise ValueError(1)"])
def test_quoted_rules_read_the_same_with_the_distinct_lines_probe(lines):
    """keep.quoted and keep.code_frames answer alike whether their pre-checks read the lines
    joined or the distinct masked lines (digits.distinct_lines) keep's analysis hands them."""
    probe = digits.distinct_lines(digits.masked(lines))
    assert keep.quoted(lines, probe) == keep.quoted(lines)
    assert keep.code_frames(lines, probe) == keep.code_frames(lines)
