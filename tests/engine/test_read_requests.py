"""The engine's read entry (Engine.request): reads cut by the task (issue 29.3) on a real stdlib
module, one ledger row per tool call (issue 32.2), and the omitted lines one `ctx expand --lines` away."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys

import pytest

from capsule.engine import Engine
from capsule.engine_read import RequestError
from capsule.ground.types import Observation, Request

MODULE = "argparse_copy.py"


@pytest.fixture(scope="module")
def source():
    import argparse

    return inspect.getsource(argparse)


@pytest.fixture
def ws(tmp_path, source):
    root = tmp_path / "ws"
    root.mkdir()
    (root / MODULE).write_text(source)
    (root / "README.md").write_text("# Demo\n\n## Install\n\npip install demo\n")
    return root


@pytest.fixture
def engine(state_dir):
    eng = Engine(state_dir=state_dir, mode="standard", scope="local")
    yield eng
    eng.close()


def body_of(source: str, name: str) -> tuple[int, list[str]]:
    """(first line number, lines) of the def `name` and its body, by indentation."""
    lines = source.split("\n")
    first = next(i for i, line in enumerate(lines) if re.match(rf"\s*def {name}\(", line))
    indent = len(lines[first]) - len(lines[first].lstrip())
    end = first + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return first + 1, lines[first:end]


def read(engine, ws, **kw):
    return engine.request(Observation(request=Request("read", ws, MODULE, **kw))).data.decode()


def rows(state_dir):
    from capsule.measure.ledger import Ledger

    return Ledger().rows()


def test_intent_naming_a_deep_function_keeps_its_body_whole_and_the_rest_one_expand_away(engine, ws, source,
                                                                                      state_dir):
    first, body = body_of(source, "_get_values")
    assert first > 2000                                        # deep inside a 2,600-line module
    text = read(engine, ws, intent="why does _get_values drop the nargs default", scope="s1")
    got = text.split("\n")
    start = got.index(f"{first}: {body[0]}")
    assert got[start:start + len(body)] == [f"{first + i}: line" .replace("line", b) for i, b in enumerate(body)]
    assert "class ArgumentParser(" in text                    # the outline is still there
    assert len(text) < len(source) // 4
    handle = re.search(r"<<ccr:([0-9a-f]{24})>>", text).group(1)
    (row,) = [r for r in rows(state_dir) if r["transform"] == "read:focus"]
    assert row["handle"] == handle and row["emitted_tokens"] < row["raw_tokens"] // 4
    # any omitted line back with the CLI's --lines (the read emission's original is archived)
    out = subprocess.run([sys.executable, "-m", "capsule", "ctx", "expand", handle, "--lines", "100-102"],
                         capture_output=True, env={"JACKIN_CTX_STATE_DIR": str(state_dir), "PATH": ""}, check=True)
    assert out.stdout.decode() == "\n".join(source.split("\n")[99:102]) + "\n"


def test_same_read_twice_is_the_same_bytes(engine, ws):
    a = read(engine, ws, intent="parse_known_args with intermixed options", scope="a")
    b = read(engine, ws, intent="parse_known_args with intermixed options", scope="b")
    assert a == b and "parse_known_args" in a


def test_a_failing_traceback_in_the_session_keeps_the_region_around_its_line(engine, ws, source):
    script = ws / "run.py"
    script.write_text("import argparse_copy\nargparse_copy.ArgumentParser().add_argument('--x', nargs=0)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ws)
    assert proc.returncode == 1 and MODULE in proc.stderr
    frames = [int(n) for p, n in re.findall(r'File "([^"]+)", line (\d+)', proc.stderr) if p.endswith(MODULE)]
    engine.observe(Observation(proc.stderr.encode(), command="python3 run.py", stream="stderr", exit_code=1,
                               scope="s2"))
    text = read(engine, ws, scope="s2")                       # a plain read, no intent: the failure cues it
    lines = source.split("\n")
    for n in frames:
        assert f"{n}: {lines[n - 1]}" in text.split("\n")
    for n in range(frames[-1] - 3, frames[-1] + 4):            # the innermost frame's neighbours, whole
        assert f"{n}: {lines[n - 1]}" in text.split("\n")
    assert "a failure's frame" in text


def test_no_cue_serves_the_plain_outline(engine, ws, state_dir):
    text = read(engine, ws, scope="s3")
    assert text.startswith("65: __version__") and "[outline: " in text and "<<ccr:" not in text
    assert [r["transform"] for r in rows(state_dir)] == ["read:signatures"]


def test_every_tool_call_writes_one_ledger_row(engine, ws, state_dir):
    handle = engine.archive.put(b"".join(b"row %d\n" % i for i in range(1, 30)) + b"ERROR boom\n")
    ask = engine.request
    ask(Observation(request=Request("search", ws, "ArgumentParser")))
    ask(Observation(request=Request("doc", ws, "README.md")))
    assert ask(Observation(request=Request("expand", ws, handle, lines="2-3"))).data == b"row 2\nrow 3\n"
    assert ask(Observation(request=Request("expand", ws, handle, grep="error"))).data == b"30:ERROR boom\n"
    got = [r["transform"] for r in rows(state_dir)]
    assert got == ["search", "doc:listing", "expand:lines", "expand:grep"]
    with pytest.raises(RequestError, match="only 30 lines"):
        ask(Observation(request=Request("expand", ws, handle, lines="90-95")))
    with pytest.raises(RequestError, match="outside the workspace"):
        ask(Observation(request=Request("read", ws, "../../etc/passwd")))
    assert len(rows(state_dir)) == 4                          # a refused request records nothing


def test_frames_are_remembered_per_session_owner_only(engine, ws, state_dir):
    engine.observe(Observation(b'Traceback (most recent call last):\n  File "x/argparse_copy.py", line 7, in f\n'
                               b"ValueError: boom\n", command="python3 -c f", exit_code=1, scope="s4"))
    path = state_dir / "focus" / "s4.json"
    assert path.stat().st_mode & 0o077 == 0
    assert [f[:2] for f in json.loads(path.read_text())] == [["x/argparse_copy.py", 7]]


def test_the_view_keeps_the_marker_contract(engine, ws, source):
    """One marker per omitted run with its range (observe/markers.py); shown lines are the file's own."""
    from capsule.observe import markers

    text = read(engine, ws, intent="_match_argument and parse_known_args", scope="s5")
    body = text.rstrip("\n").split("\n")[:-1]                    # the last line names the handle
    plain = [line.split(": ", 1)[1] if markers.parse(line) is None else line for line in body]
    assert markers.check(len(source.split("\n")) - 1, plain) is None
    assert all(source.split("\n")[int(line.split(":")[0]) - 1] == line.split(": ", 1)[1]
               for line in body if markers.parse(line) is None)


def test_a_failing_task_cut_serves_the_plain_outline(engine, ws, monkeypatch):
    """Fail open: a fault in the task cut costs the cut, never the read."""
    from capsule.retrieve import focus

    plain = read(engine, ws, scope="p1")

    def broken(*args, **kw):
        raise RuntimeError("injected")

    monkeypatch.setattr(focus, "view", broken)
    assert read(engine, ws, intent="fix _get_values", scope="p2") == plain


def test_the_users_last_prompt_naming_a_function_brings_its_body_back_whole(engine, ws, source):
    """Issue 29.3 item 2: no intent, no failure; the user's last prompt (as the door resolved it) names it."""
    first, body = body_of(source, "_get_values")
    text = read(engine, ws, scope="pr", prompt="The nargs default gets lost somewhere in `_get_values`, can you check?")
    got = text.split("\n")
    start = got.index(f"{first}: {body[0]}")
    assert got[start:start + len(body)] == [f"{first + i}: {b}" for i, b in enumerate(body)]
    assert len(text) < len(source) // 4 and "(named)" in text


def test_a_recent_edit_points_the_read_at_what_it_touched(engine, ws, source):
    first, body = body_of(source, "_check_value")
    edit = f"{ws / MODULE}\n    def _check_value(self, action, value):\n        # choices may be a set"
    text = read(engine, ws, scope="ed", edits=(edit,))
    assert f"{first}: {body[0]}" in text.split("\n") and f"{first + len(body) - 1}: {body[-1]}" in text.split("\n")
