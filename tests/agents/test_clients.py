"""Clients as data (issue 30.1): one description per client, the identity rule, doctor's view."""

from __future__ import annotations

import pytest

from capsule import agents
from capsule.agents import clients
from capsule.ground import switches
from capsule.policy import manifest


def test_every_client_is_one_data_file_with_every_field():
    described = clients.all_clients()
    assert set(described) == {"claude", "codex", "opencode", "gemini"}
    for c in described.values():
        assert c.command and c.package and c.tool_env and c.reader and c.transcripts, c
        assert c.doors and set(c.doors) <= set(clients.DOORS), c
        assert clients.version_status(c, c.tested[0]) is None and clients.version_status(c, c.tested[1]) is None
        assert manifest.AGENT_COMMANDS[c.name] == (c.command,)      # a role may name it as its agent kind
    assert agents.AGENTS == tuple(sorted(described))


def test_the_kind_of_a_launch_command_comes_from_the_descriptions():
    assert clients.kind_of(["/usr/bin/opencode", "run", "x"], "claude") == "opencode"
    assert clients.kind_of(["gemini", "--yolo", "-p", "x"], "claude") == "gemini"
    assert clients.kind_of(["bash", "-c", "make"], "claude") == "shell"
    assert clients.kind_of(None, "codex") == "codex"


@pytest.mark.parametrize("env, client", [
    ({"JACKIN_CTX_AGENT": "claude", "CLAUDECODE": "1"}, "claude"),
    ({"JACKIN_CTX_AGENT": "claude"}, None),                            # Claude Code's own git calls
    ({"CLAUDECODE": "1"}, None),                                      # a hint: capsule did not launch it
    ({"JACKIN_CTX_AGENT": "codex", "CODEX_THREAD_ID": "019a"}, "codex"),
    ({"JACKIN_CTX_AGENT": "opencode", "OPENCODE": "1", "OPENCODE_PID": "7", "AGENT": "1"}, None),
    ({"JACKIN_CTX_AGENT": "opencode", "JACKIN_CTX_TOOL": "opencode:toolu_0"}, "opencode"),
    ({"JACKIN_CTX_AGENT": "gemini", "GEMINI_CLI": "1"}, "gemini"),
    ({"JACKIN_CTX_AGENT": "gemini", "GEMINI_CLI_NO_RELAUNCH": "true"}, None),   # its own git calls
])
def test_a_tool_call_is_a_tool_child_of_the_agent_capsule_launched(env, client):
    got = clients.marked(env, switches.AGENT_MARKER)
    assert (got.name if got else None) == client


def test_the_tested_range_is_checked():
    claude = clients.get("claude")
    assert "older" in clients.version_status(claude, "2.0.1")
    assert "newer" in clients.version_status(claude, "99.0.0")
    assert clients.version_status(claude, None) == "version unknown"


def test_doors_name_what_is_live_under_a_plan():
    plan = {n: {"on": True} for n in ("shims", "mcp", "register", "engine", "proxy")}
    gemini = agents.doors("gemini", plan)
    assert gemini["doors"]["shims"]["live"] and gemini["doors"]["mcp"]["live"]
    assert gemini["doors"]["proxy"]["live"] is False          # the proxy does not speak generateContent yet
    assert gemini["identity"] == "JACKIN_CTX_AGENT=gemini + GEMINI_CLI=1"
    off = agents.doors("claude", {**plan, "shims": {"on": False}})
    assert off["doors"]["shims"]["live"] is False and off["doors"]["hooks"]["live"]
    assert agents.doors("shell", plan) == {}
