"""Agent registration: verify-then-merge, idempotent, own entries by marker, corrupt files refused."""

from __future__ import annotations

import json
import tomllib

import pytest

from capsule import agents
from capsule.agents import notes
from capsule.agents.common import MARKER_KEY


@pytest.fixture
def env(tmp_path):
    return {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CODEX_HOME": str(tmp_path / "codex"),
            "HOME": str(tmp_path)}


@pytest.fixture
def project(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    return p


def test_claude_user_scope_merges_and_keeps_other_servers(env, project, tmp_path):
    cfg = tmp_path / "claude" / ".claude.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"numStartups": 3, "mcpServers": {"other": {"type": "stdio", "command": "x"}}}))
    result = agents.register("claude", project=project, env=env)
    data = json.loads(cfg.read_text())
    assert data["numStartups"] == 3 and data["mcpServers"]["other"] == {"type": "stdio", "command": "x"}
    ours = data["mcpServers"]["capsule"]
    assert ours["type"] == "stdio" and ours["args"][-2:] == ["mcp", "serve"] and MARKER_KEY in ours["env"]
    settings = json.loads((tmp_path / "claude" / "settings.json").read_text())
    assert "mcp__capsule" in settings["permissions"]["allow"]
    assert str(cfg) in result.changed and notes.has(project / "CLAUDE.md")


def test_claude_project_scope_writes_mcp_json_and_approval(env, project):
    agents.register("claude", scope="project", project=project, env=env)
    assert "capsule" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert local["enabledMcpjsonServers"] == ["capsule"]


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_second_run_changes_nothing(agent, env, project, tmp_path):
    agents.register(agent, project=project, env=env)
    snapshot = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    again = agents.register(agent, project=project, env=env)
    assert again.changed == [] and "nothing changed" in again.lines()[0]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == snapshot


def test_corrupt_claude_config_is_refused_untouched(env, project, tmp_path):
    cfg = tmp_path / "claude" / ".claude.json"
    cfg.parent.mkdir()
    cfg.write_text("{broken")
    with pytest.raises(agents.ConfigError, match="not valid JSON"):
        agents.register("claude", project=project, env=env)
    assert cfg.read_text() == "{broken"
    assert not (tmp_path / "claude" / "settings.json").exists()


def test_foreign_entry_named_capsule_is_not_clobbered(env, project, tmp_path):
    cfg = tmp_path / "claude" / ".claude.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"mcpServers": {"capsule": {"command": "someone-elses"}}}))
    with pytest.raises(agents.ConfigError, match="did not write"):
        agents.register("claude", project=project, env=env)
    assert json.loads(cfg.read_text())["mcpServers"]["capsule"] == {"command": "someone-elses"}


def test_codex_merges_table_with_required_and_approve(env, project, tmp_path):
    cfg = tmp_path / "codex" / "config.toml"
    cfg.parent.mkdir()
    original = 'model = "o3"\n# my comment\n\n[mcp_servers.other]\ncommand = "x"\n'
    cfg.write_text(original)
    agents.register("codex", project=project, env=env)
    text = cfg.read_text()
    assert text.startswith(original)
    data = tomllib.loads(text)
    ours = data["mcp_servers"]["capsule"]
    assert ours["required"] is True and ours["default_tools_approval_mode"] == "approve"
    assert data["mcp_servers"]["other"] == {"command": "x"} and data["model"] == "o3"
    assert notes.has(project / "AGENTS.md")


def test_codex_corrupt_and_foreign_refused(env, project, tmp_path):
    cfg = tmp_path / "codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text("model = \n")
    with pytest.raises(agents.ConfigError, match="not valid TOML"):
        agents.register("codex", project=project, env=env)
    cfg.write_text('[mcp_servers.capsule]\ncommand = "theirs"\n')
    with pytest.raises(agents.ConfigError, match="did not write"):
        agents.register("codex", project=project, env=env)
    assert cfg.read_text() == '[mcp_servers.capsule]\ncommand = "theirs"\n'


@pytest.mark.parametrize("switch", ["JACKIN_CTX_DISABLE", "JACKIN_CTX_NO_MCP"])
def test_switches_leave_files_untouched(switch, env, project, tmp_path):
    result = agents.register("claude", project=project, env={**env, switch: "1"})
    assert result.skipped and switch in result.lines()[0]
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_note_block_is_idempotent_and_keeps_the_file(project):
    md = project / "CLAUDE.md"
    md.write_text("# Project rules\n\nBe kind.\n")
    assert notes.add(md)
    assert not notes.add(md)
    text = md.read_text()
    assert text.startswith("# Project rules\n\nBe kind.\n") and text.count(notes.BEGIN) == 1
    from capsule.ground.tokens import count
    assert count(notes.block()) <= 120


def test_registration_status_reports_each_agent(env, project):
    before = agents.registration_status(project, env)
    assert before["claude"]["registered"] is False and before["codex"]["registered"] is False
    agents.register("claude", project=project, env=env)
    agents.register("codex", project=project, env=env)
    after = agents.registration_status(project, env)
    assert after["claude"]["registered"] and after["codex"]["registered"] and after["claude"]["note"]
    assert after["codex"]["problem"] is None


def test_register_cli_exits_2_on_corrupt_file(capsule, tmp_path):
    cfg = tmp_path / "cc" / ".claude.json"
    cfg.parent.mkdir()
    cfg.write_text("[1,2")
    proc = capsule("mcp", "register", "--agent", "claude", "--project", str(tmp_path), "--no-note",
                   env={"CLAUDE_CONFIG_DIR": str(cfg.parent)})
    assert proc.returncode == 2 and b"not valid JSON" in proc.stderr


def test_claude_compaction_hooks_purge_stubs_and_merge_idempotently(env, project, tmp_path):
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"matcher": "", "hooks": [{"type": "command", "command": "echo mine"}]}
    settings.write_text(json.dumps({"hooks": {"PreCompact": [theirs]}}))
    agents.register("claude", project=project, env=env, note=False)
    agents.register("claude", project=project, env=env, note=False)
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["PreCompact"][0] == theirs and len(hooks["PreCompact"]) == 2
    ours = hooks["PreCompact"][1]["hooks"][0]["command"]
    assert ours.endswith("mcp forget --hook")
    assert hooks["SessionStart"][0]["matcher"] == "clear|compact"


def test_forget_hook_command_purges_that_session_only(env, project, state_dir):
    import shlex
    import subprocess

    from capsule.agents.claude import forget_command
    from capsule.store.stubs import StubStore

    for scope in ("conv:S1", "task:S1/agent1", "conv:S2", "task:S2/agent9"):
        StubStore().decide(scope, "a.txt", "full", "hello\n")
    hook_input = json.dumps({"session_id": "S1", "hook_event_name": "PreCompact", "trigger": "manual"}).encode()
    proc = subprocess.run(shlex.split(forget_command()), input=hook_input, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert StubStore().scopes() == ["conv:S2", "task:S2/agent9"]
    proc = subprocess.run(shlex.split(forget_command()), input=b"", capture_output=True, timeout=60)
    assert StubStore().scopes() == []


def test_role_that_turns_mcp_off_leaves_files_untouched(env, project, tmp_path):
    role = tmp_path / "quiet.toml"
    role.write_text('schema = 1\nname = "quiet"\ndescription = "no registration"\n\n[agent]\nkind = "shell"\n\n'
                    '[workspace]\nmount = "/workspace"\n\n[context]\nmode = "standard"\n\n'
                    '[context.subsystems]\nmcp = false\n')
    result = agents.register("claude", project=project, env={**env, "JACKIN_CTX_ROLE": str(role)})
    assert result.skipped and "mcp" in result.skipped
    assert not (tmp_path / "claude").exists()


def test_register_and_status_cli(capsule, tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "CODEX_HOME": str(tmp_path / "cx")}
    before = capsule("mcp", "status", "--project", str(tmp_path), env=env)
    assert b"claude: not registered" in before.stdout and b"codex: not registered" in before.stdout
    reg = capsule("mcp", "register", "--agent", "codex", "--project", str(tmp_path), env=env)
    assert reg.returncode == 0 and b"codex: updated" in reg.stdout
    again = capsule("mcp", "register", "--agent", "codex", "--project", str(tmp_path), env=env)
    assert b"already registered; nothing changed" in again.stdout
    after = capsule("mcp", "status", "--project", str(tmp_path), env=env)
    assert b"codex: registered" in after.stdout
