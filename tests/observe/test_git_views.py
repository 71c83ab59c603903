"""git's long outputs as an agent sees them, on a real repository made by real git: a large diff
keeps every file (header and +/- counts) with a fair share of hunks for each and its conflict
markers; `git log -p` does the same per commit; blame states each attribution once per run and
keeps every line's number and text exactly."""

from __future__ import annotations

import re
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.observe import guard, markers
from capsule.ground.types import Observation

SMALL_FILES = ["alpha.py", "beta.py", "gamma.py"]


def _env(home) -> dict:
    return {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
            "PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}


def _git_in(root):
    """A git runner for one temp repository, with a fixed author and date (deterministic hashes)."""
    env = _env(root)
    return lambda *args: subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                                        env=env).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    git = _git_in(root)
    git("init", "-q", "-b", "main")
    # every hunk header of big.py names `class ParseError(Exception):`, quoted code that reads like an error
    (root / "big.py").write_text("class ParseError(Exception):\n" + "".join(
        f"    value_{i} = compute({i}, 'original text for line {i}')\n" for i in range(3000)))
    for name in SMALL_FILES:
        (root / name).write_text("".join(f"def {name[:-3]}_{i}():\n    return {i}\n\n" for i in range(30)))
    (root / "old_name.txt").write_text("stays the same\n" * 20)
    (root / "tool.sh").write_text("echo hi\n")
    git("add", "-A")
    git("commit", "-q", "-m", "start")
    # one huge change to big.py (every 7th line) and a small one to each other file
    (root / "big.py").write_text("class ParseError(Exception):\n" + "".join(
        f"    value_{i} = compute({i}, 'refund rounding goes half-even here')\n" if i == 2900 else
        f"    value_{i} = compute({i}, 'rewritten text for line {i} with more words')\n" if i % 20 == 0 else
        f"    value_{i} = compute({i}, 'original text for line {i}')\n" for i in range(3000)))
    for name in SMALL_FILES:
        text = (root / name).read_text().replace(f"    return 5\n", f"    return 5 + {name[:-3]}_bonus()\n")
        (root / name).write_text(text)
    git("mv", "old_name.txt", "new_name.txt")
    (root / "tool.sh").chmod(0o755)
    (root / "logo.bin").write_bytes(bytes(range(256)) * 4)
    git("add", "-A")
    git("commit", "-q", "-m", "rewrite big.py\n\nAnd touch every helper once.")
    (root / "alpha.py").write_text((root / "alpha.py").read_text() + "def alpha_extra():\n    return 99\n")
    git("commit", "-q", "-am", "alpha: one more helper")
    return git


def _observe(tmp_path, raw: bytes, command: str, exit_code: int = 0, intent: str | None = None):
    engine = Engine(tmp_path / "state", mode="standard", scope="test")
    out = engine.observe(Observation(raw, command=command, exit_code=exit_code, intent=intent))
    again = engine.observe(Observation(raw, command=command, exit_code=exit_code, intent=intent))
    assert again.data == out.data, "the view is deterministic"
    return out.data.decode()


def _ranged_markers(raw: bytes, out: str) -> list[tuple[int, int, int]]:
    """The markers of a view, each ranged, in order, inside the original (markers.check_ranged)."""
    lines = out.split("\n")
    total = len(raw.decode().rstrip("\n").split("\n"))
    assert markers.check_ranged(total, lines) is None
    found = [m for m in map(markers.parse, lines) if m]
    assert all(start is not None for _, start, _ in found)
    return found


def _files(raw: str) -> list[str]:
    return [ln for ln in raw.split("\n") if ln.startswith("diff --git ")]


def test_large_diff_keeps_every_file_with_counts_and_a_fair_share(repo, tmp_path):
    raw = repo("diff", "HEAD~2", "HEAD~1")
    text = raw.decode()
    out = _observe(tmp_path, raw, "git diff HEAD~2 HEAD~1")
    lines = out.split("\n")
    assert tokens.count(out) < tokens.count(text) / 4          # the huge file does not pass whole
    for header in _files(text):
        assert header in lines                                 # every file stays visible
    for meta in ("rename from old_name.txt", "rename to new_name.txt", "old mode 100644", "new mode 100755",
                 "Binary files /dev/null and b/logo.bin differ"):
        assert meta in lines
    # big.py's counts are stated, exactly as git counts them
    adds = dels = 0
    in_big = False
    for ln in text.split("\n"):
        if ln.startswith("diff --git "):
            in_big = ln.endswith(" b/big.py")
        elif in_big and ln.startswith("+") and not ln.startswith("+++"):
            adds += 1
        elif in_big and ln.startswith("-") and not ln.startswith("---"):
            dels += 1
    assert adds == dels == 150
    assert any(f"+{adds} -{dels}" in ln for ln in lines)
    # the small files come after the huge one and still show their whole change
    for name in SMALL_FILES:
        stem = name[:-3]
        assert f"+    return 5 + {stem}_bonus()" in lines and "-    return 5" in lines
    # some of big.py's hunks are shown, in order
    assert any("@@ class ParseError(Exception):" in ln for ln in text.split("\n"))
    shown = [ln for ln in lines if ln.startswith("+    value_")]
    assert shown and shown == sorted(shown, key=lambda s: int(s.split("_")[1].split(" ")[0]))
    # each omitted run one ranged marker (the one contract), the runnable footer last
    assert _ranged_markers(raw, out) and guard.FOOTER_RE.search(lines[-2])


def test_the_intent_picks_the_hunks_of_a_large_diff(repo, tmp_path):
    raw = repo("diff", "HEAD~2", "HEAD~1")
    late = "+    value_2900 = compute(2900, 'refund rounding goes half-even here')"
    assert late in raw.decode().split("\n")
    plain = _observe(tmp_path, raw, "git diff HEAD~2 HEAD~1").split("\n")
    assert late not in plain                                   # far beyond the budget in order ...
    seeking = _observe(tmp_path, raw, "git diff HEAD~2 HEAD~1", intent="where is the refund rounding changed?")
    lines = seeking.split("\n")
    assert late in lines                                       # ... first when the agent asks for it
    assert "-    value_2900 = compute(2900, 'original text for line 2900')" in lines
    assert "+    return 5 + gamma_bonus()" in lines              # the other files keep their share
    assert tokens.count(seeking) < tokens.count(raw.decode()) / 4


def test_small_diff_keeps_every_changed_line(repo, tmp_path):
    raw = repo("diff", "HEAD~1", "HEAD")
    out = _observe(tmp_path, raw, "git diff HEAD~1 HEAD")
    for ln in raw.decode().split("\n"):
        if ln.startswith(("+", "-")):
            assert ln in out


def test_log_p_keeps_every_commit_and_every_file(repo, tmp_path):
    raw = repo("log", "-p")
    text = raw.decode()
    out = _observe(tmp_path, raw, "git log -p")
    assert tokens.count(out) < tokens.count(text) / 4
    for sha in re.findall(r"^commit ([0-9a-f]{40})", text, re.M):
        assert f"commit {sha}" in out
    for subject in ("start", "rewrite big.py", "alpha: one more helper"):
        assert f"| {subject}" in out
    assert "    And touch every helper once." in out.split("\n")    # the message says why: kept whole
    for header in _files(text):
        assert header in out
    # the newest commit is small: its change is whole, not starved by the big one
    assert "+def alpha_extra():" in out and "+    return 99" in out


def test_conflict_markers_survive_any_budget(tmp_path):
    root = tmp_path / "conflict"
    env = _env(tmp_path)

    def git(*args, check=True):
        return subprocess.run(["git", "-C", str(root), *args], check=check, capture_output=True, env=env).stdout

    root.mkdir()
    git("init", "-q", "-b", "main")
    (root / "data.py").write_text("".join(f"row_{i} = {i}\n" for i in range(2500)))
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "topic")
    (root / "data.py").write_text("".join(f"row_{i} = {i} * 2  # topic\n" if i % 3 == 0 or i == 2400 else
                                          f"row_{i} = {i}\n" for i in range(2500)))
    git("commit", "-q", "-am", "topic")
    git("checkout", "-q", "main")
    (root / "data.py").write_text("".join(f"row_{i} = {i} + 1  # main\n" if i == 2400 else f"row_{i} = {i}\n"
                                          for i in range(2500)))
    git("commit", "-q", "-am", "main")
    git("merge", "topic", check=False)
    raw = git("diff")
    text = raw.decode()
    assert "++<<<<<<< HEAD" in text
    out = _observe(tmp_path, raw, "git diff")
    assert tokens.count(out) < tokens.count(text) / 2
    for ln in text.split("\n"):
        if re.match(r"^[ +-]{2}(<<<<<<<|=======|>>>>>>>)", ln):
            assert ln in out.split("\n")
    assert "++<<<<<<< HEAD" in out and "++>>>>>>> topic" in out


def test_blame_states_each_commit_once_and_keeps_every_line(tmp_path):
    root = tmp_path / "blame"
    env = _env(tmp_path)

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env).stdout

    root.mkdir()
    git("init", "-q", "-b", "main")
    body = [f"def step_{i}(x):" if i % 4 == 0 else f"    x = x + {i}" for i in range(80)]
    body[41] = '    raise ValueError("error: bad input")'      # code that reads like an error
    (root / "mod.py").write_text("\n".join(body) + "\n")
    git("add", "-A")
    git("commit", "-q", "-m", "one")
    body[20:24] = ["    x = x * 2  # second commit"] * 4
    (root / "mod.py").write_text("\n".join(body) + "\n")
    git("commit", "-q", "-am", "two")
    raw = git("blame", "mod.py")
    text = raw.decode()
    out = _observe(tmp_path, raw, "git blame mod.py")
    assert tokens.count(out) < 0.8 * tokens.count(text)      # the repeated attribution is gone ...
    out_lines = [ln.strip() for ln in out.split("\n")]
    for ln in text.rstrip("\n").split("\n"):                 # ... every line's number and text stay exact
        m = re.match(r"^\^?[0-9a-f]+ \(.*? (\d+)\) (.*)$", ln)
        n, code = m.group(1), m.group(2)
        assert any(o.endswith(f"{n}) {code}".strip()) for o in out_lines), ln
    assert guard.count_markers(out) == 0                    # nothing was dropped
    # each commit's author and date once (the line that reads like an error is kept as printed)
    attributions = [o for o in out_lines if "(Ada Lovelace 2026-01-01" in o]
    assert len(attributions) == 3 and any("raise ValueError" in o for o in attributions)


@pytest.fixture(scope="module")
def long_history(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    git = _git_in(root)
    git("init", "-q", "-b", "main")
    for i in range(1, 121):
        (root / f"m{i % 9}.py").write_text(f"VALUE = {i}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"module {i % 9}: value {i} for the nightly report")
    return git


@pytest.mark.parametrize("args", [["log"], ["log", "--oneline"], ["log", "--stat"], ["reflog"]])
def test_an_unbounded_log_shows_its_newest_commits(long_history, tmp_path, args):
    raw = long_history(*args)
    out = _observe(tmp_path, raw, "git " + " ".join(args))
    lines = out.split("\n")
    assert "value 120 for the nightly report" in lines[0]      # newest first, as git prints it
    assert any("value 71 for" in ln for ln in lines)           # the newest 50 ...
    assert not any("value 70 for" in ln for ln in lines)       # ... and not the older ones
    # the older commits are the last omitted run: one marker up to the log's end (a reflog's
    # `commit (initial)` line, the one that differs, stays: the salience model)
    assert _ranged_markers(raw, out)[-1][2] >= len(raw.decode().rstrip("\n").split("\n")) - 1
    assert guard.FOOTER_RE.search(lines[-2])


@pytest.mark.parametrize("bound", [["-n", "100"], ["-100"], ["--max-count=100"], ["HEAD~100..HEAD"]])
def test_a_bounded_log_keeps_every_commit_it_asked_for(long_history, tmp_path, bound):
    raw = long_history("log", "--oneline", *bound)
    out = _observe(tmp_path, raw, "git log --oneline " + " ".join(bound))
    for i in range(21, 121):
        assert f"value {i} for the nightly report" in out


def _hunk(start: int, body: list[str]) -> list[str]:
    old = sum(1 for b in body if b[0] != "+")
    new = sum(1 for b in body if b[0] != "-")
    return [f"@@ -{start},{old} +{start},{new} @@ def f{start}():", *body]


@settings(max_examples=150, deadline=None)
@given(files=st.lists(st.lists(st.lists(st.sampled_from([" same", "-gone", "+came", "--- sql comment", "+++ odd",
                                                           "+<<<<<<< ours", "+=======", "+>>>>>>> theirs"]),
                                         min_size=1, max_size=40), min_size=1, max_size=6), min_size=1, max_size=8),
       budget=st.integers(min_value=0, max_value=400))
def test_any_diff_view_accounts_for_every_line(files, budget):
    """Whatever the diff and the budget: each file's header survives, every original line is
    either shown or counted as removed, a note's counts are git's, conflict marker lines stay."""
    from capsule.observe.filters.git_stream import GitFilter
    from capsule.observe.filters.streaming import run_stream

    raw: list[str] = []
    for n, hunks in enumerate(files):
        raw += [f"diff --git a/f{n}.sql b/f{n}.sql", f"index 1111111..2222222 100644", f"--- a/f{n}.sql", f"+++ b/f{n}.sql"]
        for k, body in enumerate(hunks):
            raw += _hunk(1 + 100 * k, body)
    text = "\n".join(raw) + "\n"
    flt = GitFilter()
    flt.command = "git diff"
    flt.options = {"context": 1, "full_tokens": budget, "budget_tokens": budget, "intent_share": 0.5}
    out, removals, _ = run_stream(flt, text, 0)
    lines = out.rstrip("\n").split("\n")
    notes = [ln for ln in lines if re.match(r"^\[\+\d+ -\d+ lines in \d+ hunks?; ", ln)]
    original = [ln for ln in lines if not guard.MARKER_RE.match(ln) and ln not in notes]
    assert len(original) + sum(r.count for r in removals) == len(raw)
    for n, hunks in enumerate(files):
        assert f"diff --git a/f{n}.sql b/f{n}.sql" in lines
        body = [b for h in hunks for b in h]
        counts = f"[+{sum(b[0] == '+' for b in body)} -{sum(b[0] == '-' for b in body)} lines in "
        at = lines.index(f"diff --git a/f{n}.sql b/f{n}.sql")
        after = [ln for ln in lines[at + 1:at + 3] if not markers.parse(ln)]   # (the index line's marker)
        follows = after[0] if after else ""
        assert follows.startswith(counts) or follows == f"--- a/f{n}.sql"
    for marker in ("+<<<<<<< ours", "+=======", "+>>>>>>> theirs"):
        assert (marker in lines) == (marker in raw)
    # each omitted run one ranged marker, standing only for lines counted as removed
    assert markers.check_ranged(len(raw), lines) is None
    removed = {no for r in removals for no in range(r.start, r.end + 1)}
    for m in filter(None, map(markers.parse, lines)):
        assert set(range(m[1], m[2] + 1)) <= removed
