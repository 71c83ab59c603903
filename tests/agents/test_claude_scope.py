"""Which Claude Code conversation or subagent a tool call came from, read off its transcripts."""

from __future__ import annotations

import json
import threading
import time

from capsule.agents import claude


def _line(tool_use_id: str) -> str:
    return json.dumps({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": tool_use_id}]}}) + "\n"


def test_scopes_from_transcripts(tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path), "CLAUDE_CODE_SESSION_ID": "S"}
    proj = tmp_path / "projects" / "-work-x"
    (proj / "S" / "subagents").mkdir(parents=True)
    (proj / "S.jsonl").write_text(_line("toolu_main"))
    (proj / "S" / "subagents" / "agent-abc123.jsonl").write_text(_line("toolu_sub"))
    assert claude.call_scope("toolu_main", env) == "conv:S"
    assert claude.call_scope("toolu_sub", env) == "task:S/abc123"
    assert claude.call_scope(None, env) == "conv:S"
    assert claude.call_scope("toolu_missing", env, wait_s=0.05) is None
    assert claude.call_scope("toolu_main", {"CLAUDE_CONFIG_DIR": str(tmp_path)}) is None


def test_waits_for_the_line_written_after_the_call(tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path), "CLAUDE_CODE_SESSION_ID": "S"}
    sub = tmp_path / "projects" / "-w" / "S" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-late.jsonl").write_text("")

    def write_later():
        time.sleep(0.1)
        with open(sub / "agent-late.jsonl", "a") as fh:
            fh.write(_line("toolu_late"))

    threading.Thread(target=write_later).start()
    assert claude.call_scope("toolu_late", env) == "task:S/late"
