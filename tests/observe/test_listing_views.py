"""find / tree / ls -la shown grouped by directory (filters/listing_stream.py).

Fixtures are made by running the real find, tree and ls on temp trees; the real Engine and
filters see exactly what the tool printed.
"""

from __future__ import annotations

import subprocess

import pytest

from capsule.engine import Engine
from capsule.observe.filters.filter_engine import apply
from capsule.observe.guard import MARKER_RE
from capsule.observe.transform_types import Context
from capsule.ground.types import Observation


def run(cmd: list[str], cwd) -> tuple[str, int]:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    return p.stdout + p.stderr, p.returncode


def paths_of(view: str) -> set[str]:
    """The paths a grouped view states (numbered runs `a_0…a_9` expanded, issue 25)."""
    from tests.observe.test_listing_folds import paths

    return paths(view)


@pytest.fixture
def project(tmp_path):
    for d, n in (("src/app", 12), ("tests", 9), ("docs", 6)):
        (tmp_path / d).mkdir(parents=True)
        for i in range(n):
            (tmp_path / d / f"mod_{i}.py").write_text("x = 1\n")
    (tmp_path / "src" / "app" / "test_Error.py").write_text("")   # a name with an error word
    (tmp_path / "setup.py").write_text("")
    return tmp_path


def test_find_is_grouped_by_directory_with_every_path_exact(project):
    raw, code = run(["find", ".", "-name", "*.py"], project)
    result = apply(raw, Context(command="find . -name '*.py'", filter_id="find", exit_code=code))
    assert result.removed_lines == 0
    assert set(raw.splitlines()) <= paths_of(result.text)
    assert sum(1 for ln in result.text.splitlines() if ln.startswith("./src/app/: ")) == 1
    assert "./src/app/test_Error.py" in result.text.splitlines()     # held by the policy: as printed
    assert len(result.text) < len(raw) * 0.8


def test_a_long_find_keeps_every_name_and_writes_numbered_names_as_runs(project):
    # issue 25 changed this on purpose: leaves past 200 were cut (fairly, counted by extension);
    # now every name is kept and only the repeated part folds
    cache = project / "src" / "app" / "__pycache__"
    cache.mkdir()
    for i in range(150):
        (cache / f"mod_{i}.cpython-311.pyc").write_text("")
    raw, code = run(["find", ".", "-type", "f"], project)
    out = apply(raw, Context(command="find . -type f", filter_id="find", exit_code=code)).text
    lines = out.splitlines()
    assert "./src/app/__pycache__/: mod_0.cpython-311.pyc…mod_149.cpython-311.pyc" in lines, out
    assert set(raw.splitlines()) <= paths_of(out)
    assert not [ln for ln in lines if MARKER_RE.match(ln)]


def test_find_errors_are_kept(project):
    raw, code = run(["find", ".", "missing", "-name", "*.py"], project)
    assert code == 1
    out = apply(raw, Context(command="find . missing -name '*.py'", filter_id="find", exit_code=code)).text
    error = next(ln for ln in raw.splitlines() if ln.startswith("find: "))
    assert "No such file or directory" in error and error in out.splitlines()


def test_tree_is_read_back_into_directories_and_keeps_its_count(project):
    raw, code = run(["tree"], project)
    result = apply(raw, Context(command="tree", filter_id="tree", exit_code=code))
    lines = result.text.splitlines()
    assert lines[0] == "." and lines[-1] == raw.splitlines()[-1] and "directories" in lines[-1]
    assert "./src/: app/" in lines or "./src/app/" in lines
    assert any(ln.startswith("./src/app/: ") and "test_Error.py" in ln for ln in lines)
    assert len(result.text) < len(raw) * 0.7


def test_tree_through_the_engine_passes_the_policy(project, tmp_path):
    engine = Engine(tmp_path / "state", mode="standard", scope="test")
    raw, code = run(["tree"], project)
    out = engine.observe(Observation(raw.encode(), command="tree", exit_code=code)).data.decode()
    assert out != raw and "test_Error.py" in out
    small, code = run(["tree", "docs"], project)
    assert engine.observe(Observation(small.encode(), command="tree docs", exit_code=code)).data == small.encode()


def test_ls_la_states_shared_columns_once_and_keeps_every_name(project):
    for i in range(20):
        (project / "src" / "app" / f"extra_{i}.txt").write_text("")
    raw, code = run(["ls", "-la", "src/app"], project)
    out = apply(raw, Context(command="ls -la src/app", filter_id="ls", exit_code=code)).text
    lines = out.splitlines()
    assert lines[0] == raw.splitlines()[0]                         # total N as printed
    assert lines[1].startswith("(every entry below: owner ")
    names = [ln.split()[-1] for ln in raw.splitlines()[1:]]
    assert [ln.split()[-1] for ln in lines[2:]] == names
    assert len(out) < len(raw)


def test_a_short_ls_la_is_untouched(project, tmp_path):
    engine = Engine(tmp_path / "state", mode="standard", scope="test")
    raw, code = run(["ls", "-la"], project)
    assert engine.observe(Observation(raw.encode(), command="ls -la", exit_code=code)).data == raw.encode()


def test_one_file_per_directory_is_grouped_where_the_paths_meet(tmp_path):
    for i in range(30):
        (tmp_path / "node_modules" / f"pkg-{i}").mkdir(parents=True)
        (tmp_path / "node_modules" / f"pkg-{i}" / "package.json").write_text("{}")
    raw, code = run(["find", "node_modules", "-maxdepth", "2", "-name", "package.json"], tmp_path)
    out = apply(raw, Context(command="find node_modules -name package.json", filter_id="find", exit_code=code)).text
    assert out.count("node_modules/") == 1 and out.startswith("node_modules/: ")
    assert paths_of(out) == set(raw.splitlines())


def test_ls_la_states_the_time_most_entries_share_and_keeps_the_others(project):
    app = project / "src" / "app"
    for i in range(20):
        (app / f"extra_{i}.txt").write_text("")
    subprocess.run(["touch", "-d", "2024-03-05 10:00", str(app / "mod_1.py"), str(app / "mod_2.py")], check=True)
    raw, code = run(["ls", "-la", "src/app"], project)
    out = apply(raw, Context(command="ls -la src/app", filter_id="ls", exit_code=code)).text.splitlines()
    assert out[1].startswith("(every entry below: owner ") and out[1].endswith(" unless shown)")
    old = [ln for ln in out if ln.endswith(("mod_1.py", "mod_2.py"))]
    assert len(old) == 2 and all("Mar  5  2024" in ln for ln in old)
    assert sum(1 for ln in out if "2024" in ln) == 2


def test_find_dot_keeps_its_root_line_and_groups_the_rest(project):
    raw, code = run(["find", "."], project)
    out = apply(raw, Context(command="find .", filter_id="find", exit_code=code)).text
    assert out.splitlines()[0] == "." and set(raw.splitlines()) <= paths_of(out) | {"."}
    assert len(out) < len(raw) * 0.8
