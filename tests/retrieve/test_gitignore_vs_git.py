"""The walker's .gitignore matching agrees with git itself on a tree of tricky patterns."""

from __future__ import annotations

import subprocess

from capsule.retrieve import workspace

FILES = [
    "a.log", "keep.log", "src/a.log", "src/deep/b.log", "build/x.o", "src/build/y.txt", "docs/build.md",
    "root_only.txt", "sub/root_only.txt", "tmp1/f.txt", "tmpA/f.txt", "cache/x/data.bin", "cache/keep/data.bin",
    "lib/gen/one.py", "lib/gen/two.py", "lib/gen/keep.py", "notes/#hash.txt", "notes/space name.txt",
    "deep/a/b/c/target.txt", "deep/target.txt", "star/x.tmp", "star/y.tmpl", "nested/local.txt", "nested/other.txt",
    "nested/inner/local.txt", "q/ab.txt", "q/abc.txt",
]
ROOT_IGNORE = """\
*.log
!keep.log
build/
/root_only.txt
tmp[0-9]/
cache/*
!cache/keep/
lib/**/*.py
!lib/gen/keep.py
deep/**/target.txt
*.tmp
\\#hash.txt
q/a?.txt
"""
NESTED_IGNORE = "local.txt\n"


def test_walker_matches_git(tmp_path):
    root = tmp_path / "repo"
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    (root / ".gitignore").write_text(ROOT_IGNORE)
    (root / "nested" / ".gitignore").write_text(NESTED_IGNORE)
    ours = set(workspace._walk(root))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    proc = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--others", "--exclude-standard"],
                          capture_output=True, check=True)
    theirs = {f for f in proc.stdout.decode().split("\0") if f}
    assert ours == theirs
    assert set(workspace.list_files(root)) == theirs
