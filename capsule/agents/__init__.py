"""What differs per agent: where its config lives and how capsule registers with it.

Not responsible for the MCP server itself (capsule/mcp) or launching agents (capsule/supervisor).
Invariant: JACKIN_CTX_NO_MCP and JACKIN_CTX_NO_REGISTER (and the master switch) leave every file
untouched; registration is a verified merge, idempotent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from capsule.agents.common import ConfigError
from capsule.ground import switches

AGENTS = ("claude", "codex")

__all__ = ["AGENTS", "ConfigError", "RegisterResult", "footprint", "register", "registration_status"]


@dataclass
class RegisterResult:
    agent: str
    changed: list[str] = field(default_factory=list)
    skipped: str | None = None

    def lines(self) -> list[str]:
        if self.skipped:
            return [f"{self.agent}: not registered ({self.skipped})"]
        if not self.changed:
            return [f"{self.agent}: already registered; nothing changed"]
        return [f"{self.agent}: updated {p}" for p in self.changed]


def _blocked(env) -> str | None:
    for name in (switches.DISABLE, switches.NO_MCP, switches.NO_REGISTER):
        if switches.is_on(name, env):
            return f"{name} is set"
    role = env.get(switches.ROLE)
    if role:
        try:
            from capsule.policy.manifest import load_role

            subsystems = load_role(role).context.subsystems
        except Exception:  # a broken role is reported by doctor; registration follows the switches alone
            return None
        if not subsystems.mcp or not subsystems.register:
            return f"role {role!r} turns {'mcp' if not subsystems.mcp else 'register'} off"
    return None


def register(agent: str, scope: str | None = None, project: Path | str = ".", note: bool = True,
             env=None, note_text: str | None = None) -> RegisterResult:
    """Register the read door with `agent` (claude|codex); honours the kill switches. `note_text`
    (the role's standing instructions, compiled by the caller) replaces the plain read-door note."""
    from capsule.agents import claude, codex, notes

    env = os.environ if env is None else env
    result = RegisterResult(agent)
    reason = _blocked(env)
    if reason:
        result.skipped = reason
        return result
    project = Path(project).resolve()
    if agent == "claude":
        result.changed = claude.register(scope or "user", project, env)
    elif agent == "codex":
        if scope not in (None, "user"):
            raise ConfigError(f"codex has one config scope (user: $CODEX_HOME/config.toml), not {scope!r}")
        result.changed = codex.register(env)
    else:
        raise ConfigError(f"unknown agent {agent!r}; known: {', '.join(AGENTS)}")
    if note:
        target = project / notes.FILES[agent]
        if notes.add(target, note_text):
            result.changed.append(str(target))
    return result


def registration_status(project: Path | str = ".", env=None) -> dict:
    """Per agent: {"registered": bool, "locations": [...], "problem": str|None, "note": bool}.

    For `capsule ctx doctor`; reads only, never writes.
    """
    from capsule.agents import claude, codex, notes

    env = os.environ if env is None else env
    project = Path(project).resolve()
    out = {"claude": claude.status(project, env), "codex": codex.status(env)}
    for agent, state in out.items():
        state["note"] = notes.has(project / notes.FILES[agent])
        state["switched_off"] = _blocked(env)
    return out


def footprint(project: Path | str = ".", env=None) -> list[str]:
    """Everything capsule has written outside its state dir, one `path: what` line each.

    `capsule up --local` writes nothing there (session-scoped configuration); these come from
    `capsule mcp register` (or a container's supervisor). For `capsule ctx doctor`; reads only.
    """
    import json

    from capsule.agents import claude, codex, notes

    env = os.environ if env is None else env
    project = Path(project).resolve()
    out = []
    for loc in claude.status(project, env)["locations"] + codex.status(env)["locations"]:
        if "(not capsule's)" not in loc:
            out.append(f"{loc.split(':', 1)[-1] if loc.startswith(('user:', 'project:')) else loc}: "
                       f"MCP server `{claude.SERVER_NAME}`")
    for path in (claude.config_dir(env) / "settings.json", project / ".claude" / "settings.local.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        what = []
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if isinstance(hooks, dict) and any(claude._is_our_hook_group(g) for groups in hooks.values()
                                           if isinstance(groups, list) for g in groups):
            what.append("compaction hooks")
        allow = (data.get("permissions") or {}).get("allow") if isinstance(data.get("permissions"), dict) else None
        if isinstance(allow, list) and claude.TOOL_PERMISSION in allow:
            what.append(f"permissions.allow {claude.TOOL_PERMISSION}")
        if claude.SERVER_NAME in (data.get("enabledMcpjsonServers") or []):
            what.append("enabledMcpjsonServers")
        if what:
            out.append(f"{path}: {', '.join(what)}")
    for agent in AGENTS:
        target = project / notes.FILES[agent]
        if notes.has(target):
            out.append(f"{target}: read-door note")
    return out
