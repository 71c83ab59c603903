"""A kill switch removes its subsystem's every trace, and doctor counts what the client gets (issue 33).

`up --local` for a Claude role: the --append-system-prompt text is exactly the standing parts doctor
counts (prompt/budget.py), JACKIN_CTX_NO_MCP leaves no --mcp-config and no word of the ctx_* tools,
JACKIN_CTX_NO_REGISTER (the output register, as the seeds mean it) leaves the register, guards and
guard lines out and the MCP server in.
"""

from __future__ import annotations

import pytest

from capsule.policy.manifest import load_role
from capsule.prompt import budget, pack
from capsule.supervisor.core import Options, Supervisor

PACK_PARTS = ("register", "guards", "guard lines", "read-door note", "codebook")


@pytest.mark.parametrize("switch", [None, "JACKIN_CTX_NO_MCP", "JACKIN_CTX_NO_REGISTER"])
def test_local_claude_gets_exactly_what_doctor_counts(switch, tmp_path, monkeypatch):
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path / "state"))
    for name in ("JACKIN_CTX_NO_MCP", "JACKIN_CTX_NO_REGISTER", "JACKIN_CTX_DISABLE"):
        monkeypatch.delenv(name, raising=False)
    if switch:
        monkeypatch.setenv(switch, "1")
    role = load_role("python-dev")
    sup = Supervisor(Options(role=role, command=["claude", "-p", "hi"], session_config=True))
    sup._prepare_session("claude")
    argv = sup._session_argv(["claude", "-p", "hi"])
    sent = argv[argv.index("--append-system-prompt") + 1] if "--append-system-prompt" in argv else ""
    counted = budget.texts("claude", role, sup.plan)
    assert sent == pack.SEPARATOR.join(counted[k] for k in counted if k in PACK_PARTS)
    read_door = pack.data()["read_door"]["text"]
    register = pack.data()["register"]["terse"]["text"]
    if switch == "JACKIN_CTX_NO_MCP":
        assert "--mcp-config" not in argv and "ctx_" not in sent and "mcp tools" not in counted
        assert register in sent                      # the register is not MCP's to switch off
    elif switch == "JACKIN_CTX_NO_REGISTER":
        assert "--mcp-config" in argv and read_door in sent and "mcp tools" in counted
        assert register not in sent and pack.data()["guard_lines"]["text"] not in sent
        assert not {"register", "guards", "guard lines", "subagent contract"} & set(counted)
    else:
        assert "--mcp-config" in argv and read_door in sent and register in sent


def test_no_register_keeps_mcp_registration_in_container_mode(tmp_path):
    from capsule import agents

    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude"),
           "JACKIN_CTX_NO_REGISTER": "1", "PATH": "/usr/bin:/bin"}
    result = agents.register("claude", project=tmp_path, env=env, note=False)
    assert result.skipped is None, result.lines()
    assert agents.registration_status(tmp_path, env)["claude"]["registered"] is True
