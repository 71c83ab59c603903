"""find and tree keep every name; only the repeated parts fold (issue 25, rules 3 and 4): a family
of numbered names is written as its runs, directories holding the same names are written once, and
the names that break the pattern stand on their own. Fixtures are made by running the real find
and tree on a temp tree; the real Engine sees exactly what the tool printed."""

from __future__ import annotations

import re
import subprocess

import pytest

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.ground.types import Observation

ODD = ("snapshots/snap_0147.json.corrupt", "pkgs/pkg_17/secrets_backup.py")


def run(cmd: list[str], cwd) -> str:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True,
                          env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"}).stdout


def names(item: str) -> list[str]:
    """What one written name stands for: `{a,b}.py`, `a_001.json…a_300.json`, or the name."""
    m = re.fullmatch(r"\{([^{}]*)\}(\..*)", item)
    if m:
        return [stem + m.group(2) for stem in m.group(1).split(",")]
    if "…" not in item:
        return [item]
    first, last = item.split("…")
    for a, b in zip(re.finditer(r"\d+", first), re.finditer(r"\d+", last)):
        if first[:a.start()] == last[:b.start()] and first[a.end():] == last[b.end():]:
            width = len(a.group()) if a.group().startswith("0") else 0
            return [f"{first[:a.start()]}{str(n).zfill(width)}{first[a.end():]}"
                    for n in range(int(a.group()), int(b.group()) + 1)]
    raise AssertionError(f"not a run: {item}")


def paths(view: str) -> set[str]:
    """Every path a grouped view states (`dir/: a b/`, `parent/{x,y…z}/: a b`, lines as printed)."""
    out = set()
    for line in view.splitlines():
        m = re.fullmatch(r"(.*/)\{(.*)\}/: (.*)", line)
        if m:
            dirs = [m.group(1) + d + "/" for item in m.group(2).split(",") for d in names(item)]
        elif ": " in line and line.split(": ", 1)[0].endswith("/"):
            dirs = [line.split(": ", 1)[0]]
        else:
            out.add(line.rstrip("/"))
            continue
        for d in dirs:
            out |= {d + n.rstrip("/") for item in line.split(": ", 1)[1].split() for n in names(item)}
    return out


@pytest.fixture
def project(tmp_path):
    (tmp_path / "snapshots").mkdir()
    for i in range(1, 301):
        (tmp_path / "snapshots" / f"snap_{i:04d}.json").write_text("{}")
    for i in range(40):
        pkg = tmp_path / "pkgs" / f"pkg_{i:02d}"
        pkg.mkdir(parents=True)
        for f in ("__init__.py", "models.py", "views.py"):
            (pkg / f).write_text("")
    for odd in ODD:
        (tmp_path / odd).write_text("")
    return tmp_path


def observe(tmp_path, raw: str, command: str) -> str:
    engine = Engine(tmp_path / "state", mode="standard", scope="test")
    return engine.observe(Observation(raw.encode(), command=command, exit_code=0)).data.decode()


def test_find_keeps_every_name_and_folds_only_what_repeats(project, tmp_path):
    raw = run(["find", ".", "-type", "f"], project)
    out = observe(tmp_path, raw, "find . -type f")
    assert {p[2:] for p in raw.splitlines()} <= {p.removeprefix("./") for p in paths(out)}, out
    lines = out.splitlines()
    assert "./snapshots/: snap_0001.json…snap_0300.json snap_0147.json.corrupt" in lines \
        or "./snapshots/: snap_0147.json.corrupt snap_0001.json…snap_0300.json" in lines, out
    odd = next(ln for ln in lines if ln.startswith("./pkgs/pkg_17/: "))     # the directory that differs, alone
    assert "./pkgs/pkg_17/secrets_backup.py" in paths(odd), out
    assert tokens.count(out) < tokens.count(raw) // 8, out


def test_tree_keeps_every_name_and_folds_only_what_repeats(project, tmp_path):
    raw = run(["tree"], project)
    out = observe(tmp_path, raw, "tree")
    want = set()
    for p in project.rglob("*"):
        rel = p.relative_to(project).as_posix()
        if not rel.startswith("state"):
            want.add("./" + rel)
    assert want <= paths(out), sorted(want - paths(out))[:10]
    assert raw.splitlines()[-1] in out.splitlines()
    assert any("snap_0147.json.corrupt" in ln for ln in out.splitlines())
    assert tokens.count(out) < tokens.count(raw) // 8, out
