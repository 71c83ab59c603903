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


def test_opencode_session_config_keeps_the_users_and_adds_capsules(tmp_path):
    import json

    from capsule.agents import opencode

    theirs = {"plugin": ["theirs"], "mcp": {"other": {"type": "local", "command": ["x"]}}}
    env = opencode.session_env(tmp_path, tmp_path / "state", {"OPENCODE_CONFIG_CONTENT": json.dumps(theirs)},
                               mcp=True, mark=True, instructions="use ctx_expand", base_url="http://127.0.0.1:9/v1")
    cfg = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert cfg["plugin"][0] == "theirs" and cfg["plugin"][1] == (tmp_path / opencode.PLUGIN_FILE).as_uri()
    assert set(cfg["mcp"]) == {"other", "capsule"} and cfg["mcp"]["capsule"]["environment"]["JACKIN_CTX_STATE_DIR"]
    assert '"JACKIN_CTX_TOOL"' in (tmp_path / opencode.PLUGIN_FILE).read_text()     # the tool mark it sets
    assert (tmp_path / opencode.NOTE_FILE).read_text() == "use ctx_expand"
    assert cfg["provider"]["anthropic"]["options"]["baseURL"] == "http://127.0.0.1:9/v1"
    assert opencode.session_env(tmp_path, tmp_path, {}, mcp=False, mark=False) == {}


def test_gemini_session_settings_carry_the_read_door(tmp_path):
    import json

    from capsule.agents import gemini

    (tmp_path / "theirs.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "ui": {"theme": "a"}}))
    env = gemini.session_env(tmp_path, tmp_path / "state", {gemini.SETTINGS_ENV: str(tmp_path / "theirs.json")}, mcp=True)
    cfg = json.loads(open(env[gemini.SETTINGS_ENV]).read())
    assert set(cfg["mcpServers"]) == {"other", "capsule"} and cfg["ui"] == {"theme": "a"}
    assert cfg["mcpServers"]["capsule"]["trust"] is True
    assert gemini.session_env(tmp_path, tmp_path, {}, mcp=False) == {}


def test_the_proxy_finds_opencodes_anthropic_base_url_in_its_config_layers(tmp_path):
    import json

    from capsule.proxy import redirect as proxy_clients

    home, ws = tmp_path / "home", tmp_path / "ws"
    (home / ".config" / "opencode").mkdir(parents=True)
    ws.mkdir()
    env = {"HOME": str(home)}
    assert proxy_clients.upstream("opencode", env, ws).upstream == "https://api.anthropic.com"
    (home / ".config" / "opencode" / "opencode.json").write_text(json.dumps(
        {"provider": {"anthropic": {"options": {"baseURL": "http://127.0.0.1:5/v1"}}}}))
    assert proxy_clients.upstream("opencode", env, ws).upstream == "http://127.0.0.1:5"
    (ws / "opencode.json").write_text(json.dumps({"provider": {"anthropic": {"options": {"baseURL": "http://h:6/v1/"}}}}))
    r = proxy_clients.redirect(proxy_clients.upstream("opencode", env, ws), "http://127.0.0.1:7", "unused")
    assert (r.upstream, r.base_url) == ("http://h:6", "http://127.0.0.1:7/v1")
    (ws / "opencode.json").write_text("{ // a comment\n}")
    assert "not plain JSON" in proxy_clients.upstream("opencode", env, ws).skip
    assert proxy_clients.upstream("gemini", env, ws).skip
