"""Claude Code: register the read door in its MCP config and approve it, merging, never clobbering.

User scope: `mcpServers.capsule` in $CLAUDE_CONFIG_DIR/.claude.json (else ~/.claude.json), tools
allowed in the user settings.json, plus PreCompact / SessionStart(clear|compact) hooks running
`capsule mcp forget` so read stubs never outlive the context that held the content.
Project scope: `<project>/.mcp.json` plus the approval `enabledMcpjsonServers`, the tool allow and
the hooks in `<project>/.claude/settings.local.json`. Also: which conversation or subagent a tool
call came from (call_scope), read off Claude Code's transcripts.
Not responsible for launching Claude Code. Invariant: verify, then merge; a corrupt file or a
foreign `capsule` entry is refused with a message; a second run changes nothing.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
import time

from capsule.agents.common import (MARKER_KEY, MARKER_VALUE, SERVER_NAME, ConfigError, is_ours, server_command,
                                   write_atomic)

TOOL_PERMISSION = f"mcp__{SERVER_NAME}"
# The hook door's tools (capsule/shims/hook_door.py answers their PostToolUse events; the proxy then
# leaves their results alone: one rewrite path per result). Bash is the shims' (INV-8), and
# capsule's own MCP tools are the engine's own output.
HOOK_TOOLS = ("Read", "Grep", "Glob", "WebFetch")
HOOK_MATCHER = "Read|Grep|Glob|WebFetch|mcp__.*"
# Grep's input keys that are ripgrep's own flags (its output is ripgrep's): with them the engine sees
# the search as it ran, context asked for included (a search with context is a read of regions).
GREP_FLAGS = ("-i", "-n", "-A", "-B", "-C")


def grep_command(args: dict) -> str:
    """Claude Code's Grep tool call as the ripgrep command line it stands for."""
    words = ["rg"]
    for flag in GREP_FLAGS:
        value = args.get(flag)
        if value is True:
            words.append(flag)
        elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10_000:
            words += [flag, str(value)]
    words.append(shlex.quote(str(args.get("pattern") or "")))
    if args.get("path"):
        words.append(shlex.quote(str(args["path"])))
    return " ".join(words)
OWN_TOOL_PREFIX = f"mcp__{SERVER_NAME}__"


def hook_owns(tool: str) -> bool:
    """Is `tool`'s result the hook door's when the door is on?"""
    return tool in HOOK_TOOLS or (tool.startswith("mcp__") and not tool.startswith(OWN_TOOL_PREFIX))
FORGET_HOOKS = (("PreCompact", ""), ("SessionStart", "clear|compact"))


def config_dir(env=None) -> Path:
    env = os.environ if env is None else env
    explicit = env.get("CLAUDE_CONFIG_DIR")
    return Path(explicit) if explicit else Path.home() / ".claude"


def user_config_path(env=None) -> Path:
    env = os.environ if env is None else env
    explicit = env.get("CLAUDE_CONFIG_DIR")
    return Path(explicit) / ".claude.json" if explicit else Path.home() / ".claude.json"


def _read_json(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix or move it, then run again") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a JSON {type(data).__name__}, not an object; fix it, then run again")
    return data


def _dump(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def entry() -> dict:
    command, args = server_command()
    return {"type": "stdio", "command": command, "args": args, "env": {MARKER_KEY: MARKER_VALUE}}


def _merge_server(path: Path, data: dict, table_owner: dict) -> bool:
    servers = table_owner.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcpServers is not an object; fix it, then run again")
    current = servers.get(SERVER_NAME)
    if current is not None and not is_ours(current):
        raise ConfigError(f"{path}: an mcpServers.{SERVER_NAME} entry exists that capsule did not write; "
                          f"remove or rename it, then run again")
    wanted = entry()
    if current == wanted:
        return False
    servers[SERVER_NAME] = wanted
    return True


def forget_command() -> str:
    command, args = server_command()
    return shlex.join([command, *args[:-1], "forget", "--hook"])


def _is_our_hook_group(group: object) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return bool(hooks) and all(isinstance(h, dict) and " mcp forget" in str(h.get("command", ""))
                               and "capsule" in str(h.get("command", "")) for h in hooks)


def _merge_hooks(path: Path, data: dict) -> None:
    """Compaction and /clear empty the model's context while the server lives on: purge the stubs."""
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{path}: hooks is not an object; fix it, then run again")
    for event, matcher in FORGET_HOOKS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{path}: hooks.{event} is not a list; fix it, then run again")
        ours = {"matcher": matcher, "hooks": [{"type": "command", "command": forget_command()}]}
        for i, group in enumerate(groups):
            if _is_our_hook_group(group):
                groups[i] = ours
                break
        else:
            groups.append(ours)


def merge_forget_hooks(data: dict, path: Path | str = "session settings") -> None:
    """The compaction hooks merged into a settings dict (also used for session-scoped settings)."""
    _merge_hooks(Path(path), data)


def _merge_settings(path: Path, approve_mcpjson: bool) -> bool:
    data = _read_json(path)
    _merge_hooks(path, data)
    perms = data.setdefault("permissions", {})
    if not isinstance(perms, dict) or not isinstance(perms.setdefault("allow", []), list):
        raise ConfigError(f"{path}: permissions.allow is not a list; fix it, then run again")
    if TOOL_PERMISSION not in perms["allow"]:
        perms["allow"].append(TOOL_PERMISSION)
    if approve_mcpjson:
        enabled = data.setdefault("enabledMcpjsonServers", [])
        if not isinstance(enabled, list):
            raise ConfigError(f"{path}: enabledMcpjsonServers is not a list; fix it, then run again")
        if SERVER_NAME not in enabled:
            enabled.append(SERVER_NAME)
    return write_atomic(path, _dump(data))


def register(scope: str = "user", project: Path | str = ".", env=None) -> list[str]:
    """Merge the server (and its approval); returns the files changed."""
    project = Path(project).resolve()
    changed: list[str] = []
    if scope == "user":
        path = user_config_path(env)
        settings = config_dir(env) / "settings.json"
        approve_mcpjson = False
    elif scope == "project":
        path = project / ".mcp.json"
        settings = project / ".claude" / "settings.local.json"
        approve_mcpjson = True
    else:
        raise ConfigError(f"unknown Claude Code scope {scope!r}; use user or project")
    data = _read_json(path)
    _read_json(settings)  # verify both files before writing either
    if _merge_server(path, data, data) and write_atomic(path, _dump(data)):
        changed.append(str(path))
    if _merge_settings(settings, approve_mcpjson):
        changed.append(str(settings))
    return changed


def status(project: Path | str = ".", env=None) -> dict:
    project = Path(project).resolve()
    locations, problems = [], []
    for label, path in (("user", user_config_path(env)), ("project", project / ".mcp.json")):
        try:
            data = _read_json(path)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        tables = [data] + ([data["projects"][str(project)]] if label == "user" and isinstance(
            data.get("projects"), dict) and isinstance(data["projects"].get(str(project)), dict) else [])
        for table in tables:
            servers = table.get("mcpServers")
            if isinstance(servers, dict) and SERVER_NAME in servers:
                locations.append(f"{label}:{path}" + ("" if is_ours(servers[SERVER_NAME]) else " (not capsule's)"))
    return {"registered": bool(locations), "locations": locations, "problem": "; ".join(problems) or None}


# -- scopes: which conversation (or subagent) a tool call came from --------------------------------
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"     # set by Claude Code in the MCP server's environment
TOOL_USE_META = "claudecode/toolUseId"     # in each tools/call _meta
TRANSCRIPT_TAIL = 512 << 10


def conversation_scope(session_id: str) -> str:
    return f"conv:{session_id}"


def task_scope(session_id: str, agent_id: str) -> str:
    return f"task:{session_id}/{agent_id}"


def _tail_has(path: Path, needle: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - TRANSCRIPT_TAIL))
            return needle in fh.read()
    except OSError:
        return False


def call_scope(tool_use_id: str | None, env=None, wait_s: float = 2.5, poll_s: float = 0.01) -> str | None:
    """The stub scope of one Claude Code tool call, from its transcripts; None when unknown.

    Subagents share the parent's MCP connection, so the call's tool_use id is looked up in the
    session's transcripts: found in `<session>/subagents/agent-<id>.jsonl` -> that task's scope; found
    in the main transcript (or no subagent ever ran) -> the conversation's scope. Claude Code writes
    the tool_use line ~50 ms after the call arrives, hence the short wait. None (not Claude Code, or
    not found in time) means: send in full and record nothing.
    """
    env = os.environ if env is None else env
    session = env.get(SESSION_ENV)
    if not session:
        return None
    projects = config_dir(env) / "projects"
    if not tool_use_id:
        return conversation_scope(session)
    needle = f'"{tool_use_id}"'.encode()
    deadline = time.monotonic() + wait_s
    while True:
        for path in projects.glob(f"*/{session}/subagents/agent-*.jsonl"):
            if _tail_has(path, needle):
                return task_scope(session, path.stem.removeprefix("agent-"))
        for path in projects.glob(f"*/{session}.jsonl"):
            if _tail_has(path, needle):
                return conversation_scope(session)
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_s)

