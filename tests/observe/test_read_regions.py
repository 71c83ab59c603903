"""Every door's file view is cut by the task (issue 29.3 item 3, observe/read_focus.py): a file past
the read budget read by `cat` (the shims, `capsule ctx run`, Claude Code's Read through the hook door)
keeps its outline plus, whole, what the user's prompt quotes, the session's failing lines and what
its edits touched; one ranged marker per omitted run, each line one `ctx expand --lines` away; with
no cue the plain outline as before.

The file is the shape of the real miss (benchmarks/data/traffic, observation entire-setup-03: a
672-line Go file whose two status lines the user's prompt quotes), written here and read by `cat`.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.observe import markers
from capsule.observe.cues import cues

SAVED = '\tfmt.Fprintln(w, "✓ Settings saved")'
PROMPT = ('when you run "entire enable" again and there is already a `.entire/settings.json` we ask the user '
          'which file to update. We should also show this in the status message which currently only is '
          '"✓ Settings saved". Can you suggest something?')


def _steps(name: str, n: int) -> list[str]:
    out = []
    for i in range(n):
        out += [f"\tif err := {name}Step{i}(ctx); err != nil {{",
                f'\t\treturn fmt.Errorf("{name} step {i}: %w", err)', "\t}"]
    return out


def setup_go() -> str:
    """A Go file of 25 declarations; the quoted line deep inside two long functions."""
    out = ["package cli", "", "import (", '\t"errors"', '\t"fmt"', '\t"io"', ")", ""]
    for k in range(15):
        out += [f"func helper{k}(ctx io.Writer) error {{", *_steps(f"helper{k}", 6), "\treturn nil", "}", ""]
    for name in ("runEnableWithStrategy", "runEnableInteractive"):
        out += [f"func {name}(w io.Writer, shouldUseLocal bool) error {{", *_steps(name, 12),
                "\tif shouldUseLocal {", "\t\tif err := SaveEntireSettingsLocal(); err != nil {",
                '\t\t\treturn fmt.Errorf("failed to save local settings: %w", err)', "\t\t}", "\t}",
                SAVED, *_steps(name + "After", 12), "\treturn nil", "}", ""]
    for k in range(5):
        out += [f"func status{k}(w io.Writer) error {{", *_steps(f"status{k}", 10),
                '\treturn errors.New("unreachable")', "}", ""]
    return "\n".join(out)


@pytest.fixture
def go_file(tmp_path):
    path = tmp_path / "w" / "setup.go"
    path.parent.mkdir()
    path.write_text(setup_go())
    raw = subprocess.run(["cat", str(path)], capture_output=True, check=True).stdout
    assert 600 < raw.count(b"\n") < 700
    return path, raw


def numbered(raw: bytes, wanted: str) -> list[str]:
    return [f"{n}: {line}" for n, line in enumerate(raw.decode().split("\n"), 1) if line == wanted]


def body_lines(text: str) -> list[str]:
    """The emission's lines without the recovery footer."""
    return [ln for ln in text.split("\n")[:-1] if not ln.startswith("[full output:")]


def test_the_prompt_quoting_a_line_keeps_it_whole_through_cat(go_file, state_dir):
    path, raw = go_file
    eng = Engine(state_dir, mode="standard", scope="s-1")
    plain = eng.observe(Observation(raw, command=f"cat {path}", scope="s-1")).data.decode()
    em = eng.observe(Observation(raw, command=f"cat {path}", scope="s-1", prompt=PROMPT))
    text = em.data.decode()
    eng.close()
    quoted = numbered(raw, SAVED)
    assert len(quoted) == 2 and not any(q in plain.split("\n") for q in quoted)    # the miss
    assert all(q in text.split("\n") for q in quoted)                              # both shown whole
    assert em.transform_id == "focus" and len(text) < len(raw) // 2
    assert markers.check(raw.decode().count("\n"), body_lines(text)) is None      # one ranged marker a run
    # any omitted line is one `ctx expand --lines` away
    handle = re.search(r"<<ccr:([0-9a-f]{24})>>", text).group(1)
    first = next(markers.parse(ln) for ln in text.split("\n") if markers.parse(ln))
    got = subprocess.run([sys.executable, "-m", "capsule", "ctx", "expand", handle, "--lines", f"{first[1]}-{first[2]}"],
                         capture_output=True, env={"JACKIN_CTX_STATE_DIR": str(state_dir), "PATH": ""})
    assert got.returncode == 0, got.stderr
    assert got.stdout.decode() == "\n".join(raw.decode().split("\n")[first[1] - 1:first[2]]) + "\n"


def test_no_cue_serves_the_plain_outline(go_file, state_dir):
    path, raw = go_file
    eng = Engine(state_dir, mode="standard", scope="s-2")
    em = eng.observe(Observation(raw, command=f"cat {path}", scope="s-2"))
    eng.close()
    text = em.data.decode()
    assert em.transform_id == "outline" and "[structure:" in text and SAVED not in text
    assert "task's regions" not in text


def test_a_failure_naming_a_line_of_the_file_keeps_its_region(go_file, state_dir):
    path, raw = go_file
    n = int(numbered(raw, SAVED)[1].split(":")[0])
    eng = Engine(state_dir, mode="standard", scope="s-3")
    eng.observe(Observation(f"# entire.io/cli\n{path}:{n}:2: undefined: w\n".encode(), command="go build ./...",
                            exit_code=1, scope="s-3"))
    text = eng.observe(Observation(raw, command=f"cat {path}", scope="s-3")).data.decode()
    eng.close()
    lines = raw.decode().split("\n")
    for k in range(n - 3, n + 4):                          # the failing line and its neighbours, whole
        assert f"{k}: {lines[k - 1]}" in text.split("\n")


def test_an_edit_points_the_read_at_what_it_touched(go_file, state_dir):
    path, raw = go_file
    edit = f"{path}\nif shouldUseLocal {{\n\tif err := SaveEntireSettingsLocal(); err != nil {{"
    eng = Engine(state_dir, mode="standard", scope="s-4")
    text = eng.observe(Observation(raw, command=f"cat {path}", scope="s-4", edits=(edit,))).data.decode()
    eng.close()
    want = numbered(raw, "\t\tif err := SaveEntireSettingsLocal(); err != nil {")
    assert len(want) == 2 and all(w in text.split("\n") for w in want)


def test_the_cues_keep_what_a_prompt_quotes():
    got = cues(None, [], [], prompt=PROMPT)
    assert got.quotes == ("entire enable", "✓ Settings saved")
    assert cues('say “done twice” here', [], []).quotes == ("done twice",)
    assert cues(None, [], [], prompt='a "x" then "ok"').quotes == ()          # too short to point


def test_ctx_run_cat_with_the_prompt_as_intent_keeps_the_quoted_line(go_file, capsule):
    path, raw = go_file
    got = capsule("ctx", "run", "--intent", PROMPT, "--", "cat", str(path))
    assert got.returncode == 0, got.stderr
    out = got.stdout.decode().split("\n")
    assert all(q in out for q in numbered(raw, SAVED)) and len(got.stdout) < len(raw) // 2
    plain = capsule("ctx", "run", "--", "cat", str(path)).stdout.decode()
    assert SAVED not in plain and "[structure:" in plain
