"""The hook door (capsule/shims/hook_door.py) with the real engine, and the hook script Claude Code
runs (agents/hook_template/tool_hook.py) with no supervisor: the embedded engine answers.

The real client's side (a native Read and Grep through 2.1.x) is tests/e2e/test_claude_hook_door.py.
"""

from __future__ import annotations

import json
import subprocess
import time

import apsw
import pytest

from capsule.agents import session
from capsule.engine import Engine
from capsule.shims import hook_door

ROWS = "".join(f"ord-{i:05d},cust-{i % 97:04d},shipped,{10 + i * 0.5:.2f}\n" for i in range(3000))
BAD = "ord-01700,cust-0051,failed: card_declined issuer timeout,99.00\n"
DATA = ROWS.replace(ROWS.splitlines(keepends=True)[1700], BAD)


def _read_event(text=DATA, tool_use_id="toolu_1", path="/w/orders.csv"):
    return {"hook_event_name": "PostToolUse", "session_id": "s-1", "tool_use_id": tool_use_id, "tool_name": "Read",
            "tool_input": {"file_path": path}, "cwd": "/w",
            "tool_response": {"type": "text", "file": {"filePath": path, "content": text,
                                                       "numLines": text.count("\n"), "startLine": 1,
                                                       "totalLines": text.count("\n") + 1}}}


@pytest.fixture
def engine(state_dir):
    e = Engine(state_dir)
    yield e
    e.close()


def _rows(state_dir):
    if not (state_dir / "ledger.db").exists():
        return []
    return apsw.Connection(str(state_dir / "ledger.db")).execute("SELECT command, handle FROM emissions").fetchall()


def test_a_large_read_comes_back_shrunk_in_the_read_tools_shape(engine, state_dir):
    value = hook_door.answer(engine, _read_event())
    assert value["type"] == "text" and value["file"]["filePath"] == "/w/orders.csv"
    content = value["file"]["content"]
    assert content.startswith(hook_door.READ_NOTE) and "card_declined issuer timeout" in content
    assert len(content) < len(DATA) / 5 and "<<ccr:" in content
    assert value["file"]["numLines"] == content.count("\n") + 1
    assert value["file"]["totalLines"] == DATA.count("\n") + 1      # the file's own figures stay
    (command, handle), = _rows(state_dir)
    assert command == "cat /w/orders.csv" and handle
    assert engine.archive.get(handle) == DATA.encode()


def test_the_same_event_gets_the_same_bytes_and_one_ledger_row(engine, state_dir):
    first = hook_door.hook_output(hook_door.answer(engine, _read_event()))
    again = hook_door.hook_output(hook_door.answer(engine, _read_event()))
    assert first == again and first
    assert len(_rows(state_dir)) == 1
    other = hook_door.answer(engine, _read_event(tool_use_id="toolu_2"))   # another call: its own row
    assert other == json.loads(first)["hookSpecificOutput"]["updatedToolOutput"]
    assert len(_rows(state_dir)) == 2


@pytest.mark.parametrize("event", [
    {**_read_event(), "tool_name": "Bash", "tool_response": {"stdout": DATA, "stderr": ""}},      # the shims'
    {**_read_event(), "tool_name": "mcp__capsule__ctx_read", "tool_response": DATA},              # capsule's own
    _read_event(text="short\n"),                                                                   # too small
    {**_read_event(), "tool_response": {"type": "image", "file": {"base64": "AAAA"}}},            # not text
    {**_read_event(), "tool_response": "not the Read shape"},                                      # malformed
    {**_read_event(), "hook_event_name": "PreToolUse"},
])
def test_what_the_door_leaves_alone(engine, state_dir, event):
    assert hook_door.answer(engine, event) is None
    assert _rows(state_dir) == []


def test_grep_glob_and_other_mcp_servers_keep_their_shapes(engine):
    lines = "\n".join(f"src/m{i % 9}.py:{i}:    # TODO tidy imports in module {i}" for i in range(400))
    grep = {**_read_event(), "tool_name": "Grep", "tool_input": {"pattern": "TODO", "path": "src"},
            "tool_response": {"mode": "content", "numFiles": 0, "filenames": [], "content": lines, "numLines": 400}}
    value = hook_door.answer(engine, grep)
    assert value["mode"] == "content" and len(value["content"]) < len(lines) and "<<ccr:" in value["content"]
    assert value["numLines"] == value["content"].count("\n") + 1
    records = "\n".join(json.dumps({"id": i, "status": "ok", "msg": f"handled request {i}"}) for i in range(400))
    mcp = {**grep, "tool_name": "mcp__orders__export", "tool_use_id": "toolu_9",
           "tool_response": [{"type": "text", "text": records}]}
    blocks = hook_door.answer(engine, mcp)
    assert [b["type"] for b in blocks] == ["text"] and "<<ccr:" in blocks[0]["text"]
    assert len(blocks[0]["text"]) < len(records) / 5
    names = "\n".join(f"src/pkg{i % 40}/module_{i}.py" for i in range(3000))
    glob = {**grep, "tool_name": "Glob", "tool_use_id": "toolu_10", "tool_input": {"pattern": "**/*.py"},
            "tool_response": {"filenames": names.split("\n"), "numFiles": 3000, "truncated": False, "durationMs": 5}}
    value = hook_door.answer(engine, glob)
    assert value is None or (value["numFiles"] == len(value["filenames"]) < 3000 and value["durationMs"] == 5)


def test_a_read_the_users_prompt_points_into_keeps_the_quoted_lines_whole(engine, state_dir, tmp_path):
    """Claude Code's native Read of a long Go file (the real miss, benchmarks/data/traffic entire-setup-03):
    the lines the user's last prompt quotes come back whole beside the outline (observe/read_focus.py)."""
    from tests.observe.test_read_regions import PROMPT, SAVED, setup_go

    source = setup_go()
    quoted = [f"{n}: {line}" for n, line in enumerate(source.split("\n"), 1) if line == SAVED]
    plain = hook_door.answer(engine, _read_event(source, "toolu_p0", "/w/setup.go"))["file"]["content"]
    assert "[structure:" in plain and not any(q in plain.split("\n") for q in quoted)
    d = session.intents_dir(state_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / "s-1.jsonl").write_text(json.dumps({"kind": "prompt", "prompt": PROMPT, "t": time.time()}) + "\n")
    got = hook_door.answer(engine, _read_event(source, "toolu_p1", "/w/setup.go"))["file"]["content"]
    assert got.startswith(hook_door.READ_NOTE) and all(q in got.split("\n") for q in quoted)
    assert len(got) < len(source) // 2


def test_a_failing_engine_leaves_the_output_alone(engine, state_dir, monkeypatch):
    monkeypatch.setattr(engine, "observe", lambda obs: 1 / 0)
    assert hook_door.answer(engine, _read_event()) is None


def test_the_hook_script_without_a_supervisor_runs_the_embedded_engine(tmp_path, state_dir):
    """What Claude Code runs: the session's settings name the script; with no socket answering it
    asks `python -m capsule.shims.hook_door`, and prints Claude Code's PostToolUse answer."""
    sdir = tmp_path / "session"
    sdir.mkdir()
    argv = session.claude_argv(["claude", "-p", "x"], sdir, state_dir, mcp=False, intent=False,
                               python="/usr/bin/python3", tool_hook=True)
    settings = json.loads((sdir / "settings.json").read_text())
    group, = settings["hooks"]["PostToolUse"]
    assert group["matcher"] == "Read|Grep|Glob|WebFetch|mcp__.*" and argv[1:3] == ["--settings", str(sdir / "settings.json")]
    env = {"PATH": "/usr/bin:/bin", "JACKIN_CTX_SOCKET": str(tmp_path / "nobody.sock")}
    out = subprocess.run(group["hooks"][0]["command"], shell=True, input=json.dumps(_read_event()).encode(),
                         capture_output=True, env=env, timeout=60)
    answer = json.loads(out.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PostToolUse"
    assert "card_declined issuer timeout" in answer["updatedToolOutput"]["file"]["content"]
    assert len(_rows(state_dir)) == 1
    small = subprocess.run(group["hooks"][0]["command"], shell=True, input=b'{"tool_name":"Read"}',
                           capture_output=True, env=env, timeout=60)
    assert small.returncode == 0 and small.stdout == b""


def test_answers_older_than_a_day_are_removed_at_the_next_session_start(engine, state_dir):
    import os
    import time

    hook_door.answer(engine, _read_event())
    hook_door.answer(engine, _read_event(tool_use_id="toolu_2"))
    old, new = sorted((state_dir / hook_door.MEMO_DIR).glob("*/*.json"))
    os.utime(old, (time.time() - 2 * session.INTENT_RETENTION_S,) * 2)
    session.prepare(state_dir)
    assert sorted((state_dir / hook_door.MEMO_DIR).glob("*/*.json")) == [new]
