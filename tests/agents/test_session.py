"""Session-scoped agent configuration (`up --local`) and the intent read back from the hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from capsule.agents import intent_log, notes, session
from capsule.agents.common import SERVER_NAME


def test_claude_flags_point_at_files_in_the_state_dir(tmp_path):
    state = tmp_path / "state"
    d = session.prepare(state)
    argv = session.claude_argv(["/usr/bin/claude", "-p", "hi"], d, state, mcp=True, intent=True, python=sys.executable)
    assert argv[0] == "/usr/bin/claude" and argv[-2:] == ["-p", "hi"]
    mcp = json.loads((d / "mcp.json").read_text())["mcpServers"][SERVER_NAME]
    assert mcp["env"]["JACKIN_CTX_STATE_DIR"] == str(state)                    # the read door finds its state
    settings = json.loads((d / "settings.json").read_text())
    assert settings["permissions"]["allow"] == ["mcp__capsule"]
    assert {"PreCompact", "SessionStart", "PreToolUse", "UserPromptSubmit"} <= set(settings["hooks"])
    assert argv[argv.index("--append-system-prompt") + 1] == notes.NOTE
    assert all(str(p).startswith(str(state)) for p in (argv[argv.index("--mcp-config") + 1],
                                                         argv[argv.index("--settings") + 1]))
    theirs = session.claude_argv(["claude", "--append-system-prompt", "be brief"], d, state, mcp=True,
                                 intent=False, python=sys.executable)
    assert theirs.count("--append-system-prompt") == 1 and theirs[-1] == f"be brief\n\n{notes.NOTE}"
    assert session.claude_argv(["claude", "mcp", "list"], d, state, mcp=True, intent=True,
                               python=sys.executable) == ["claude", "mcp", "list"]
    wrapped = session.claude_argv(["npx", "-y", "claude", "-p", "hi"], d, state, mcp=True, intent=False,
                                  python=sys.executable)
    assert wrapped[:3] == ["npx", "-y", "claude"] and wrapped[3] == "--mcp-config" and wrapped[-2:] == ["-p", "hi"]
    assert session.claude_argv(["my-agent", "-p"], d, state, mcp=True, intent=True,
                               python=sys.executable) == ["my-agent", "-p"]


def test_codex_overrides_keep_the_users_instructions(tmp_path):
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text('developer_instructions = "mine"\n')
    argv = session.codex_argv(["codex", "exec", "hi"], tmp_path / "state", {"CODEX_HOME": str(home)}, mcp=True)
    assert argv[0] == "codex" and argv[-2:] == ["exec", "hi"]
    assert f'developer_instructions={json.dumps("mine" + chr(10) * 2 + notes.NOTE)}' in argv
    assert f'mcp_servers.capsule.env.JACKIN_CTX_STATE_DIR={json.dumps(str(tmp_path / "state"))}' in argv
    assert session.codex_argv(["codex", "exec"], tmp_path, {}, mcp=False) == ["codex", "exec"]
    wrapped = session.codex_argv(["timeout", "60", "/usr/bin/codex", "exec"], tmp_path, {}, mcp=True)
    assert wrapped[:4] == ["timeout", "60", "/usr/bin/codex", "-c"] and wrapped[-1] == "exec"


def test_a_dead_sessions_dir_is_removed_on_the_next_start(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = session.sessions_root(tmp_path) / str(dead.pid)
    stale.mkdir(parents=True)
    (stale / "mcp.json").write_text("{}")
    mine = session.prepare(tmp_path)
    assert not stale.exists() and mine.is_dir()
    session.finish(mine)
    assert not mine.exists()


def _hook(state, event: dict) -> None:
    d = session.prepare(state)
    script = session._hook_command(d, state, sys.executable).split()[-1]
    proc = subprocess.run([sys.executable, "-IS", script], input=json.dumps(event), capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_hook_records_and_lookup_finds_the_calls_description(tmp_path):
    state = tmp_path / "state"
    _hook(state, {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "prompt": "why does checkout fail?"})
    _hook(state, {"hook_event_name": "PreToolUse", "session_id": "s-1", "tool_name": "Bash", "tool_use_id": "t1",
                  "tool_input": {"command": "cd src && grep -rn 'retry' . | head -50", "description": "Find retries"}})
    _hook(state, {"hook_event_name": "PreToolUse", "session_id": "s-1", "tool_name": "Bash", "tool_use_id": "t2",
                  "tool_input": {"command": "git log --stat -15"}})
    d = session.intents_dir(state)
    assert intent_log.lookup(d, "s-1", "grep -rn retry .") == "Find retries"
    assert intent_log.lookup(d, "s-1", "git log --stat -15") == "why does checkout fail?"   # no description: the prompt
    assert intent_log.lookup(d, "s-2", "grep -rn retry .") is None
    assert intent_log.lookup(d, "s-1", "grep -rn retry .", now=time.time() + 3600) is None  # stale
    _hook(state, {"hook_event_name": "PreToolUse", "session_id": "../evil", "tool_input": {"command": "x"}})
    assert not (state / "sessions" / "evil.jsonl").exists() and (d / "evil.jsonl").exists()
    _hook(state, {"not": "a hook event"})                                               # silent, no record
    assert sorted(os.listdir(d)) == ["evil.jsonl", "s-1.jsonl"]


def test_hook_records_edits_and_the_prompt_for_the_task_cues(tmp_path):
    """Item 2 of issue 29.3: the user's last prompt and the session's Edit/Write calls are the task's
    cues; the hook keeps them per session, owner-only, redacted (secrets never land on disk)."""
    state = tmp_path / "state"
    d = session.prepare(state)
    argv = session.claude_argv(["claude", "-p", "hi"], d, state, mcp=False, intent=True, python=sys.executable)
    settings = json.loads((d / "settings.json").read_text())
    (pre,) = settings["hooks"]["PreToolUse"]
    assert set(pre["matcher"].split("|")) >= {"Bash", "Edit", "MultiEdit", "Write"} and argv
    _hook(state, {"hook_event_name": "UserPromptSubmit", "session_id": "e-1", "prompt": "fix `apply_discount` first"})
    _hook(state, {"hook_event_name": "PreToolUse", "session_id": "e-1", "tool_name": "Edit", "tool_use_id": "t1",
                  "tool_input": {"file_path": "/w/shop/pay.py", "old_string": "a", "new_string": "def settle_ledger():"}})
    _hook(state, {"hook_event_name": "PreToolUse", "session_id": "e-1", "tool_name": "Write", "tool_use_id": "t2",
                  "tool_input": {"file_path": "/w/conf.py",
                                 "content": "TOKEN = 'ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'\n"}})
    _hook(state, {"hook_event_name": "PreToolUse", "session_id": "e-1", "tool_name": "MultiEdit", "tool_use_id": "t3",
                  "tool_input": {"file_path": "/w/shop/cart.py", "edits": [{"old_string": "x", "new_string": "cartTotal"}]}})
    prompt, edits = intent_log.said(session.intents_dir(state), "e-1")
    assert prompt == "fix `apply_discount` first"
    assert edits[0] == "/w/shop/cart.py\ncartTotal" and edits[2].startswith("/w/shop/pay.py\ndef settle_ledger")
    assert "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" not in (session.intents_dir(state) / "e-1.jsonl").read_text()
    assert (session.intents_dir(state) / "e-1.jsonl").stat().st_mode & 0o077 == 0
    assert intent_log.lookup(session.intents_dir(state), "e-1", "pytest -q") == "fix `apply_discount` first"  # edits are no goal
    assert intent_log.said(session.intents_dir(state), "e-2") == (None, ())
