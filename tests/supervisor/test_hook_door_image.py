"""The hook door in container mode (issue 30.3): `capsule up --role python-dev` without --local (the
image) registers capsule's MCP server in the agent's user files, and still gives Claude Code the
same session-scoped PostToolUse hook as `--local` (a --settings file in the state dir), so nothing
of the hook is in the user's ~/.claude; the proxy is told the hook is on. With the engine off (the
master switch) there is no hook. The real client in the image: tests/container/test_hook_door_in_image.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capsule.agents import claude
from capsule.policy.manifest import load_role
from capsule.supervisor.core import Options, Supervisor


def _container_supervisor(tmp_path: Path, monkeypatch, switch: str | None = None) -> Supervisor:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path / "state"))
    for name in ("JACKIN_CTX_DISABLE", "JACKIN_CTX_NO_MCP", "JACKIN_CTX_MEASURE_ONLY"):
        monkeypatch.delenv(name, raising=False)
    if switch:
        monkeypatch.setenv(switch, "1")
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    sup = Supervisor(Options(role=load_role("python-dev"), command=["claude", "-p", "hi"], workdir=tmp_path / "ws"))
    sup._register_agents()
    return sup


def _hooks(argv: list[str]) -> dict:
    assert "--settings" in argv, argv
    return json.loads(Path(argv[argv.index("--settings") + 1]).read_text())["hooks"]


def test_the_image_gets_the_session_scoped_hook_door_and_the_user_files_do_not(tmp_path, monkeypatch):
    sup = _container_supervisor(tmp_path, monkeypatch)
    assert ".claude.json" in sup.registration.get("claude", ""), sup.registration    # MCP: the user files, as before
    argv = sup._session_argv(["claude", "-p", "hi"])
    assert argv[0] == "claude" and argv[-2:] == ["-p", "hi"]
    hooks = _hooks(argv)
    assert [g["matcher"] for g in hooks["PostToolUse"]] == [claude.HOOK_MATCHER]
    settings = Path(argv[argv.index("--settings") + 1])
    assert settings.parent.parent == tmp_path / "state" / "sessions"      # this session's dir in the state dir
    # the user's files hold the MCP registration and its forget hooks, never the hook door
    user = tmp_path / "home" / ".claude"
    written = "".join(p.read_text() for p in [*user.rglob("*.json"), tmp_path / "home" / ".claude.json"] if p.is_file())
    assert "mcpServers" in written and "PostToolUse" not in written and "tool_hook" not in written
    # no second MCP config or note on the command line: the user files carry them in the image
    assert "--mcp-config" not in argv and "--append-system-prompt" not in argv
    assert sup.hook_door_on


def test_without_the_engine_the_image_has_no_hook_door(tmp_path, monkeypatch):
    sup = _container_supervisor(tmp_path, monkeypatch, "JACKIN_CTX_DISABLE")
    assert not sup.hook_door_on
    assert sup._session_argv(["claude", "-p", "hi"]) == ["claude", "-p", "hi"]


@pytest.mark.parametrize("command", [["codex", "exec", "hi"], ["bash", "-c", "true"]])
def test_other_agents_in_the_image_get_no_hook_settings(tmp_path, monkeypatch, command):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.delenv("JACKIN_CTX_DISABLE", raising=False)
    (tmp_path / "home").mkdir()
    sup = Supervisor(Options(role=load_role("python-dev"), command=command, workdir=tmp_path))
    sup._register_agents()
    assert not sup.hook_door_on and sup.session_dir is None
    assert "--settings" not in sup._session_argv(list(command))
