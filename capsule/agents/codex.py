"""Codex: register the read door as `[mcp_servers.capsule]` in $CODEX_HOME/config.toml.

Adds `required = true` (Codex waits for the server) and `default_tools_approval_mode = "approve"`
(else `codex exec` refuses the call). Not responsible for Codex's other settings.
Invariant: the file is parsed before and after the edit; a corrupt file or a foreign
`mcp_servers.capsule` is refused with a message; every other byte of the file is kept.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

from capsule.ground import paths
from capsule.agents.common import (MARKER_KEY, MARKER_VALUE, SERVER_NAME, ConfigError, is_ours, server_command,
                                   write_atomic)
from capsule.ground import switches

BEGIN = f"# >>> {SERVER_NAME} (managed by `capsule mcp register`; edits here are replaced)"
END = f"# <<< {SERVER_NAME}"


def codex_home(env=None) -> Path:
    env = os.environ if env is None else env
    explicit = env.get("CODEX_HOME")
    return Path(explicit) if explicit else Path.home() / ".codex"


def config_path(env=None) -> Path:
    return codex_home(env) / "config.toml"


def _parse(path: Path, text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix or move it, then run again") from None


def pinned_env(env=None) -> dict[str, str]:
    """What the read door needs from capsule's session, pinned in the table: Codex starts MCP
    servers with a minimal environment, so without this `ctx_expand` of a handle a shim just
    printed would look in the wrong state dir (issue 9.4)."""
    env = os.environ if env is None else env
    pins = {switches.STATE_DIR: env.get(switches.STATE_DIR) or str(paths.state_dir())}
    for name in (switches.ROLE, switches.MODE, switches.RETENTION):
        if env.get(name):
            pins[name] = env[name]
    return pins


def block(env=None) -> str:
    command, args = server_command()
    return "\n".join([
        BEGIN,
        f"[mcp_servers.{SERVER_NAME}]",
        f"command = {json.dumps(command)}",
        f"args = {json.dumps(args)}",
        "required = true",
        'default_tools_approval_mode = "approve"',
        "",
        f"[mcp_servers.{SERVER_NAME}.env]",
        f"{MARKER_KEY} = {json.dumps(MARKER_VALUE)}",
        *(f"{k} = {json.dumps(v)}" for k, v in sorted(pinned_env(env).items())),
        END,
        "",
    ])


_OURS = re.compile(rf"^{re.escape(BEGIN)}\n.*?^{re.escape(END)}\n?", re.S | re.M)


def register(env=None) -> list[str]:
    path = config_path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    data = _parse(path, text)
    current = (data.get("mcp_servers") or {}).get(SERVER_NAME)
    if current is not None and not is_ours(current):
        raise ConfigError(f"{path}: an [mcp_servers.{SERVER_NAME}] table exists that capsule did not write; "
                          f"remove or rename it, then run again")
    rest = _OURS.sub("", text)
    if SERVER_NAME in ((_parse(path, rest).get("mcp_servers")) or {}):
        raise ConfigError(f"{path}: mcp_servers.{SERVER_NAME} is defined outside capsule's marked block; "
                          f"remove it, then run again")
    if _OURS.search(text):   # keep our block where it was, for a stable file
        new = _OURS.sub(lambda _m: block(env), text, count=1)
    elif text.strip():
        new = text + ("" if text.endswith("\n") else "\n") + "\n" + block(env)
    else:
        new = block(env)
    check = _parse(path, new).get("mcp_servers", {}).get(SERVER_NAME)
    if not is_ours(check) or check.get("required") is not True:
        raise ConfigError(f"{path}: merged config did not verify; left unchanged")
    return [str(path)] if write_atomic(path, new) else []


def status(env=None) -> dict:
    path = config_path(env)
    try:
        data = _parse(path, path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"registered": False, "locations": [], "problem": None}
    except ConfigError as exc:
        return {"registered": False, "locations": [], "problem": str(exc)}
    entry = (data.get("mcp_servers") or {}).get(SERVER_NAME)
    if entry is None:
        return {"registered": False, "locations": [], "problem": None}
    return {"registered": True, "locations": [str(path) + ("" if is_ours(entry) else " (not capsule's)")],
            "problem": None if entry.get("required") else "required = true is missing"}


# -- scopes: which thread and context window a tool call came from ---------------------------------
def call_scope(meta: dict | None) -> str | None:
    """Codex sends `threadId` and `windowId` (thread:N, N counting context windows) in each call's _meta.

    A subagent is its own thread and a compaction opens a new window, so one window is one scope:
    a stub never crosses into a subagent or past a compaction. None when the call is not from Codex.
    """
    if not isinstance(meta, dict):
        return None
    window = meta.get("windowId")
    thread = meta.get("threadId")
    if isinstance(window, str) and window:
        return f"conv:codex:{window}"
    if isinstance(thread, str) and thread:
        return f"conv:codex:{thread}"
    return None


# -- the model a Codex session runs (its output cap depends on it: capsule/agents/limits.py) -------
def model_of(argv: list[str], env=None) -> str | None:
    """`-m/--model X` or `-c model=X` on the command line, else `model` in config.toml, else None."""
    for i, arg in enumerate(argv):
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg in ("-m", "--model") and nxt:
            return nxt
        if arg.startswith("--model="):
            return arg.split("=", 1)[1]
        if arg in ("-c", "--config") and nxt and nxt.replace(" ", "").startswith("model="):
            value = nxt.split("=", 1)[1].strip()
            return value.strip("\"'") or None
    try:
        value = tomllib.loads(config_path(env).read_text(encoding="utf-8")).get("model")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return value if isinstance(value, str) and value else None
