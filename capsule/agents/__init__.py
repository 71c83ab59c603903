"""What differs per agent: where its config lives and how capsule registers with it.

Not responsible for the MCP server itself (capsule/mcp) or launching agents (capsule/supervisor).
Invariant: JACKIN_CTX_NO_MCP (and the master switch) leave every file untouched
(JACKIN_CTX_NO_REGISTER is the output register's switch: the caller leaves it out of the note);
registration is a verified merge, idempotent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
import json
import shutil
import subprocess

from capsule.agents import clients
from capsule.agents.common import ConfigError
from capsule.ground import switches
from capsule.agents import claude, codex, notes
from capsule.policy.manifest import load_role

AGENTS = clients.names()                 # every described client (data/clients/*.toml)
REGISTERABLE = ("claude", "codex")       # `capsule mcp register`: the clients with a user-scope writer

__all__ = ["AGENTS", "REGISTERABLE", "ConfigError", "RegisterResult", "client_info", "doors", "footprint",
           "register", "registration_status", "role_context"]


def role_context(name: str):
    """The [context] table of the role `name` (policy/manifest.py), for a door that must not reach
    below the engine; raises what load_role raises."""
    return load_role(name).context


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
    for name in (switches.DISABLE, switches.NO_MCP):
        if switches.is_on(name, env):
            return f"{name} is set"
    role = env.get(switches.ROLE)
    if role:
        try:
            subsystems = load_role(role).context.subsystems
        except Exception:  # a broken role is reported by doctor; registration follows the switches alone
            return None
        if not subsystems.mcp:
            return f"role {role!r} turns mcp off"
    return None


def register(agent: str, scope: str | None = None, project: Path | str = ".", note: bool | str = True,
             env=None, note_text: str | None = None) -> RegisterResult:
    """Register the read door with `agent` (claude|codex); honours the kill switches.

    `note`: True writes the read-door note into the project's instruction file, "user" into the
    agent's user-level one (the container's supervisor: nothing lands in the workspace), False none.
    `note_text` (the role's standing instructions, compiled by the caller) replaces the plain note.
    A note that cannot be written is reported in the result; the registration stands."""
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
        raise ConfigError(f"unknown agent {agent!r}; known: {', '.join(REGISTERABLE)}")
    if note:
        target = notes.user_file(agent, env) if note == "user" else project / notes.FILES[agent]
        try:
            if notes.add(target, note_text):
                result.changed.append(str(target))
        except OSError as exc:
            result.changed.append(f"note not written to {target}: {exc.strerror or exc}")
    return result


def registration_status(project: Path | str = ".", env=None) -> dict:
    """Per agent: {"registered": bool, "locations": [...], "problem": str|None, "note": bool}.

    For `capsule ctx doctor`; reads only, never writes.
    """
    env = os.environ if env is None else env
    project = Path(project).resolve()
    out = {"claude": claude.status(project, env), "codex": codex.status(env)}
    for agent, state in out.items():
        state["note"] = notes.has(project / notes.FILES[agent]) or notes.has(notes.user_file(agent, env))
        state["switched_off"] = _blocked(env)
    return out


def footprint(project: Path | str = ".", env=None) -> list[str]:
    """Everything capsule has written outside its state dir, one `path: what` line each.

    `capsule up --local` writes nothing there (session-scoped configuration); these come from
    `capsule mcp register` (or a container's supervisor). For `capsule ctx doctor`; reads only.
    """
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
    for agent in notes.FILES:
        for target in (project / notes.FILES[agent], notes.user_file(agent, env)):
            if notes.has(target):
                out.append(f"{target}: read-door note")
    return out


def client_info(command: str, env=None) -> dict:
    """Where an agent client's binary is and its version: {"command", "path", "version", "source"}.

    The version comes from the npm package.json the binary belongs to (no need to start a 245 MB
    binary for `capsule ctx doctor`), else, for claude and codex only, from `COMMAND --version`
    (5 s budget; another role command is never run). Reads only."""
    env = os.environ if env is None else env
    path = shutil.which(command, path=env.get("PATH"))
    info: dict = {"command": command, "path": path, "version": None, "source": None}
    if path is None:
        return info
    real = Path(path).resolve()
    info["path"] = str(real) if real != Path(path) else path
    for parent in list(real.parents)[:4]:
        try:
            meta = json.loads((parent / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and isinstance(meta.get("version"), str) and isinstance(meta.get("name"), str):
            info.update(version=meta["version"], source=f"{meta['name']} (npm)")
            return info
    if os.path.basename(command) not in REGISTERABLE:
        return info
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=5,
                              stdin=subprocess.DEVNULL)
        first = (proc.stdout or proc.stderr).strip().splitlines()
        if proc.returncode == 0 and first:
            info.update(version=first[0][:80], source="--version")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def doors(kind: str, plan: dict | None = None, running: bool = False) -> dict:
    """What doctor says of one client: its description and, per door it has, whether it is live.

    `plan`: the subsystem decisions ({name: {"on": bool, ...}}); a door is live when its subsystem
    is on (shims: shims; mcp: mcp and register; hooks: engine; proxy: proxy and a model API the
    proxy speaks). Reads only."""
    client = clients.get(kind)
    if client is None:
        return {}
    plan = plan or {}

    def on(*names: str) -> bool:
        return all((plan.get(n) or {}).get("on", False) for n in names)

    speaks = client.api in ("anthropic", "openai")
    live = {"shims": on("shims"), "mcp": on("mcp", "register"), "hooks": on("engine"),
            "proxy": on("proxy") and speaks}
    return {"name": client.name, "title": client.title, "tested": list(client.tested),
            "identity": f"{switches.AGENT_MARKER}={client.name} + {client.tool_env}"
                        f"{'=' + client.tool_value if client.tool_value else ''}",
            "transcripts": client.transcripts, "session": client.session,
            "doors": {door: {"how": how, "live": live.get(door, False)} for door, how in client.doors.items()}}
