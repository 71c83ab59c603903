"""OpenCode: the session-scoped configuration `capsule up` gives it (data/clients/opencode.toml).

Everything goes in OPENCODE_CONFIG_CONTENT, which OpenCode merges over its own config files for
this process alone: the read door under `mcp.capsule` (type local, state dir pinned), capsule's
session plugin (its `shell.env` hook sets the tool mark on each bash-tool child: OpenCode's own git
calls carry OPENCODE=1 and AGENT=1 too, so those cannot tell them apart), the read-door note as
an `instructions` file, and with the proxy on, the Anthropic provider's baseURL.
Not responsible for user-scope registration (OpenCode has none here) nor for its transcripts
(capsule/measure/transcripts/opencode_transcript.py). Invariant: nothing outside the session dir is written;
a user's own OPENCODE_CONFIG_CONTENT is kept, capsule's keys merged into it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from capsule.agents import clients
from capsule.agents.common import MARKER_KEY, MARKER_VALUE, SERVER_NAME, server_command
from capsule.ground import switches

CONFIG_ENV = "OPENCODE_CONFIG_CONTENT"
PLUGIN_TEMPLATE = Path(__file__).with_name("hook_template") / "opencode_plugin.js"
PLUGIN_FILE = "capsule-opencode-plugin.js"
NOTE_FILE = "capsule-opencode-note.md"


def data_dir(env=None) -> Path:
    """Where OpenCode keeps its state (opencode.db): $XDG_DATA_HOME/opencode, else ~/.local/share/opencode."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(base) / "opencode"


def _theirs(env) -> dict:
    text = (env or {}).get(CONFIG_ENV) or ""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def session_env(session_dir: Path, state_dir: Path, env, *, mcp: bool, mark: bool,
                instructions: str | None = None, base_url: str | None = None) -> dict[str, str]:
    """The environment entries for one OpenCode session ({} when there is nothing to add)."""
    config = _theirs(env)
    added = False
    if mark:
        plugin = Path(session_dir) / PLUGIN_FILE
        tool_env = clients.get("opencode").tool_env
        plugin.write_text(PLUGIN_TEMPLATE.read_text(encoding="utf-8").replace("@TOOL_ENV@", json.dumps(tool_env)),
                          encoding="utf-8")
        plugins = config.get("plugin") if isinstance(config.get("plugin"), list) else []
        config["plugin"] = [*plugins, plugin.as_uri()]
        added = True
    if mcp:
        command, args = server_command()
        servers = config.get("mcp") if isinstance(config.get("mcp"), dict) else {}
        servers[SERVER_NAME] = {"type": "local", "command": [command, *args], "enabled": True,
                                "environment": {MARKER_KEY: MARKER_VALUE, switches.STATE_DIR: str(state_dir)}}
        config["mcp"] = servers
        added = True
    if instructions:
        note = Path(session_dir) / NOTE_FILE
        note.write_text(instructions, encoding="utf-8")
        have = config.get("instructions") if isinstance(config.get("instructions"), list) else []
        config["instructions"] = [*have, str(note)]
        added = True
    if base_url:
        provider = config.setdefault("provider", {}) if isinstance(config.get("provider", {}), dict) else {}
        anthropic = provider.setdefault("anthropic", {})
        anthropic.setdefault("options", {})["baseURL"] = base_url
        config["provider"] = provider
        added = True
    return {CONFIG_ENV: json.dumps(config, sort_keys=True)} if added else {}
