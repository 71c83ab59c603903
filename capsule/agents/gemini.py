"""Gemini CLI: the session-scoped configuration `capsule up` gives it (data/clients/gemini.toml).

GEMINI_CLI_SYSTEM_SETTINGS_PATH names a settings file in the session dir (the "system" layer,
which Gemini CLI merges over the user's ~/.gemini/settings.json and the project's
.gemini/settings.json for this process alone): the read door under `mcpServers.capsule`, state dir
pinned, trusted (no confirmation per call). A system settings file the user already points at is
copied into it, capsule's server merged in.
Not responsible for its transcripts (capsule/measure/transcripts/gemini_transcript.py) nor for its tool mark
(GEMINI_CLI=1, set by Gemini CLI on run_shell_command children). Invariant: nothing outside the
session dir is written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from capsule.agents.common import MARKER_KEY, MARKER_VALUE, SERVER_NAME, server_command
from capsule.ground import switches

SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
SETTINGS_FILE = "gemini-system-settings.json"


def home(env=None) -> Path:
    """Gemini CLI's dir: $GEMINI_CLI_HOME/.gemini, else ~/.gemini."""
    env = os.environ if env is None else env
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"


def _theirs(env) -> dict:
    path = (env or {}).get(SETTINGS_ENV)
    if not path:
        return {}
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def session_env(session_dir: Path, state_dir: Path, env, *, mcp: bool) -> dict[str, str]:
    """The environment entries for one Gemini CLI session ({} when there is nothing to add)."""
    if not mcp:
        return {}
    settings = _theirs(env)
    command, args = server_command()
    servers = settings.get("mcpServers") if isinstance(settings.get("mcpServers"), dict) else {}
    servers[SERVER_NAME] = {"command": command, "args": args, "trust": True,
                            "env": {MARKER_KEY: MARKER_VALUE, switches.STATE_DIR: str(state_dir)}}
    settings["mcpServers"] = servers
    path = Path(session_dir) / SETTINGS_FILE
    path.write_text(json.dumps(settings, indent=2, sort_keys=True), encoding="utf-8")
    return {SETTINGS_ENV: str(path)}
