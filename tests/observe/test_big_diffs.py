"""Big diffs keep their file map (issue 25): past the size where a diff passed whole (a file with no
hunk shown lost its `+++ b/path` line, which the policy holds, so the whole diff went raw), a diff
of 100+ files is still cut at file boundaries with every file named. Real git, a repository made here."""

from __future__ import annotations

import subprocess

import pytest

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.ground.types import Observation


def git(repo, *args) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("bigrepo")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "a@b.c")
    git(repo, "config", "user.name", "A")
    for rev in range(3):
        for k in range(220):
            d = repo / f"pkg{k % 9}"
            d.mkdir(exist_ok=True)
            body = "".join(f"def f_{k}_{i}(x):\n    return x * {i + rev * 7} + {k}\n\n" for i in range(12))
            (d / f"mod_{k}.py").write_text(f'"""Module {k}, revision {rev}."""\n' + body)
        git(repo, "add", ".")
        git(repo, "commit", "-qm", f"revision {rev}: every module")
    return repo


def seen(tmp_path, raw: bytes, command: str) -> str:
    return Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command=command)) \
        .data.decode("utf-8", "surrogateescape")


def test_git_show_of_a_220_file_commit_is_mapped_not_passed_whole(repo, tmp_path):
    raw = git(repo, "show", "HEAD")
    files = [ln for ln in raw.decode().splitlines() if ln.startswith("diff --git ")]
    assert len(files) == 220 and tokens.count_bytes(raw) > 40_000
    out = seen(tmp_path, raw, "git show HEAD")
    lines = out.splitlines()
    assert all(f in lines for f in files)                                  # every file named
    assert tokens.count(out) < tokens.count_bytes(raw) // 5
    assert "revision 2: every module" in out


def test_git_log_p_of_big_commits_keeps_every_commit_and_file(repo, tmp_path):
    raw = git(repo, "log", "-p", "-n", "3")
    out = seen(tmp_path, raw, "git log -p -n 3")
    assert tokens.count(out) < tokens.count_bytes(raw) // 5
    for rev in range(3):
        assert f"revision {rev}: every module" in out
    assert sum(1 for ln in out.splitlines() if ln.startswith("diff --git ")) == \
        sum(1 for ln in raw.decode().splitlines() if ln.startswith("diff --git "))
