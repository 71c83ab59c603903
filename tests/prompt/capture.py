"""Requests of the real Claude Code and Codex, captured by a local fake model API, with and without
capsule: what capsule adds to every request is the difference.

Shared by tests/prompt/test_standing_real_clients.py and benchmarks/capture_standing.py (which
writes capsule/prompt/data/client_tools.json from the same captures). Not a model: the fake scripts
one read-door call, then answers "done", so a session is two requests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.anthropic import ToolCalls, tool_results_in  # noqa: F401 - test_standing_real_clients reads it here
from tests.fakes.openai import FunctionCalls

TIMEOUT_S = 240
CODEX_MODEL = "gpt-5"          # not deferring MCP tools: the namespace is sent whole (the upper bound)
READ = {"path": "README.md", "mode": "full"}


def client(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed; run scripts/setup-clients.sh"
    return path


def base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / ".local" / "state"),
               XDG_CONFIG_HOME=str(home / ".config"), PYTHONDONTWRITEBYTECODE="1",
               JACKIN_CTX_STATE_DIR=str(home / "state"))
    return env


def capsule_up(role: str | Path) -> list[str]:
    return [sys.executable, "-m", "capsule", "up", "--role", str(role), "--local", "--"]


@dataclass
class Capture:
    requests: list[dict]
    stdout: str
    stderr: str


def claude(ws: Path, home: Path, *, role: str | Path | None = None, extra: list[str] = (),
           calls: list[dict] | None = None, env: dict | None = None, fake: ToolCalls | None = None,
           tools: str = "mcp__capsule") -> Capture:
    """One `claude -p` session (inside `capsule up --role ROLE --local` when role is given)."""
    home.mkdir(parents=True, exist_ok=True)
    fake = fake or ToolCalls([("mcp__capsule__ctx_read", c) for c in ([READ] if calls is None else calls)])
    try:
        run_env = {**base_env(home), "CLAUDE_CONFIG_DIR": str(home / "claude"), "ANTHROPIC_BASE_URL": fake.url,
                   "ANTHROPIC_API_KEY": "test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                   "DISABLE_AUTOUPDATER": "1", "MCP_CONNECTION_NONBLOCKING": "0", **(env or {})}
        argv = [client("claude"), "-p", "read the readme", "--allowedTools", tools,
                "--output-format", "json", *extra]
        if role is not None:
            argv = capsule_up(role) + argv
        proc = subprocess.run(argv, cwd=ws, env=run_env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"claude exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return Capture([r for r in fake.requests if r.get("tools") and "SUBAGENT-TASK" not in json.dumps(r["messages"][:1])],
                       proc.stdout, proc.stderr)
    finally:
        fake.close()


def codex(ws: Path, home: Path, *, role: str | Path | None = None, extra_config: str = "",
          calls: list | None = None, model: str = CODEX_MODEL, env: dict | None = None) -> Capture:
    """One `codex exec` session (inside `capsule up --role ROLE --local` when role is given)."""
    home.mkdir(parents=True, exist_ok=True)
    fake = FunctionCalls([("ctx_read", READ)] if calls is None else calls, namespace="mcp__capsule")
    try:
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(fake.provider_config(model)
                                                + extra_config)
        run_env = {**base_env(home), "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "test", **(env or {})}
        argv = [client("codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                "read the readme"]
        if role is not None:
            argv = capsule_up(role) + argv
        proc = subprocess.run(argv, cwd=ws, env=run_env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"codex exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return Capture(list(fake.requests), proc.stdout, proc.stderr)
    finally:
        fake.close()


# -- what differs ------------------------------------------------------------------------------------
def added_tools(plain: dict, other: dict) -> list[dict]:
    """Tools in `other`'s request that `plain`'s has not (by name), in `other`'s order."""
    names = {t.get("name") or t.get("type") for t in plain.get("tools") or []}
    return [t for t in other.get("tools") or [] if (t.get("name") or t.get("type")) not in names]


def deferred_names(body: dict) -> set[str]:
    """The tools a Claude Code request lists as deferred behind ToolSearch (2.1.332: MCP tools among
    them; the model loads a definition by name, the client then sends it with defer_loading)."""
    from tests.fakes.anthropic import DEFERRED  # noqa: PLC0415

    out: set[str] = set()
    for m in body.get("messages", []):
        for c in m.get("content") if isinstance(m.get("content"), list) else []:
            text = c.get("text", "") if isinstance(c, dict) else ""
            if DEFERRED in text:
                out |= set(text.split(DEFERRED, 1)[1].split("\n\n", 1)[0].splitlines()[1:])
    return out


def claude_system_text(body: dict) -> str:
    """The standing text of a Messages request: its system blocks, role:system messages and the
    <system-reminder> blocks of the first user message (where Claude Code puts the agent types and
    the MCP server instructions when --agents is given)."""
    system = body.get("system") or []
    blocks = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    for i, m in enumerate(body.get("messages", [])):
        c = m.get("content")
        texts = [c] if isinstance(c, str) else [b.get("text", "") for b in c or [] if b.get("type") == "text"]
        if m.get("role") == "system":
            blocks += texts
        elif i == 0 and m.get("role") == "user":   # the first message's <system-reminder> blocks (with --agents)
            blocks += [t for t in texts if t.startswith("<system-reminder>")]
    return "\n".join(blocks)


def codex_developer_text(body: dict) -> str:
    """The developer messages of a Responses request (its standing instructions)."""
    out = []
    for item in body.get("input", []):
        if item.get("type") == "message" and item.get("role") == "developer":
            out += [c.get("text", "") for c in item.get("content") or []]
    return "\n".join(out)


def standing_part(client_name: str, body: dict) -> str:
    """The part of a request that stays the same across a session's calls: tools + instructions."""
    text = claude_system_text(body) if client_name == "claude" else (codex_developer_text(body) + (body.get("instructions") or ""))
    # a deferred definition (defer_loading) is sent once the model loaded it: not in the cached prefix
    tools = [t for t in body.get("tools") or [] if not t.get("defer_loading")]
    return json.dumps(tools, sort_keys=True) + "\n" + text


RESOURCE_SERVER = '''
from mcp.server.mcpserver import MCPServer
s = MCPServer("probe")
@s.resource("probe://x")
def x() -> str:
    return "x"
@s.tool(name="probe", structured_output=False, description="probe")
def probe() -> str:
    return "p"
s.run("stdio")
'''
