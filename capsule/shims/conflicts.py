"""The conflict probe (INV-8): exactly one shell-rewrite path per capsule.

Finds what would rewrite or shadow the agent's shell commands besides capsule's shims: another
shim directory ahead of capsule's on PATH, an RTK-style PreToolUse hook in Claude Code settings,
an `rtk` binary. Not responsible for fixing them. Invariant: reads only, never writes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from capsule import shims

REWRITERS = ("rtk",)  # third-party shell-output rewriters known to install hooks or shims


@dataclass(frozen=True)
class ShimState:
    dirs: list[str]            # capsule shim directories on PATH, in order
    first: bool                # every shimmed tool resolves to a capsule shim first
    shadowed: list[str]        # "git: /x/git ahead of /opt/capsule/shims/git"


def which_all(name: str, path: str) -> list[str]:
    hits = []
    for d in path.split(":"):
        cand = os.path.join(d or ".", name)
        if os.access(cand, os.X_OK) and not os.path.isdir(cand):
            hits.append(cand)
    return hits


def shim_state(env: Mapping[str, str] | None = None) -> ShimState:
    env = os.environ if env is None else env
    path = env.get("PATH", "")
    dirs = [d for d in dict.fromkeys(path.split(":")) if d and (Path(d) / shims.PROGRAM).is_file()
            and shims.is_capsule_shim(Path(d) / shims.PROGRAM)]
    shadowed = []
    if dirs:
        for tool in shims.tools():
            hits = which_all(tool, path)
            ours = [h for h in hits if shims.is_capsule_shim(Path(h))]
            if ours and hits[0] != ours[0]:
                shadowed.append(f"{tool}: {hits[0]} ahead of {ours[0]}")
    return ShimState(dirs=dirs, first=bool(dirs) and not shadowed, shadowed=shadowed)


def claude_settings_paths(env: Mapping[str, str]) -> list[Path]:
    base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude"
    cwd = Path.cwd()
    return [base / "settings.json", cwd / ".claude" / "settings.json", cwd / ".claude" / "settings.local.json"]


def hook_conflicts(env: Mapping[str, str]) -> list[str]:
    """PreToolUse hooks on the Bash tool: they rewrite commands before capsule's shims see them."""
    found = []
    for path in claude_settings_paths(env):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks", {}) if isinstance(data, dict) else {}
        for entry in hooks.get("PreToolUse", []) if isinstance(hooks, dict) else []:
            if not isinstance(entry, dict) or "Bash" not in str(entry.get("matcher", "")):
                continue
            for hook in entry.get("hooks", []):
                command = str(hook.get("command", "")) if isinstance(hook, dict) else ""
                if "capsule" not in command:
                    found.append(f"PreToolUse Bash hook in {path}: {command[:80]}")
    return found


def probe(env: Mapping[str, str] | None = None) -> list[str]:
    """Every detected conflict, one line each; empty when capsule is the only rewrite path."""
    env = os.environ if env is None else env
    conflicts = list(shim_state(env).shadowed)
    conflicts += hook_conflicts(env)
    for tool in REWRITERS:
        for hit in which_all(tool, env.get("PATH", "")):
            conflicts.append(f"{tool} on PATH: {hit}")
    return conflicts
