"""What the agent is launched with, apart from the role's lanes (route/policy.py): which client it
is, which of its outputs is its own view (the shims' env file), the shell-rewrite conflict probe
(INV-8), and the lookup of its executable on the agent's PATH.

Not responsible for starting the process (pid1.py) or for when it starts (core.py). Invariant:
nothing here writes outside the shim dir, and a probe that fails reports no conflict.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from capsule.agents import clients
from capsule.ground import switches
from capsule.policy.manifest import Role

log = logging.getLogger("capsule.supervisor")



def agent_kind(role: Role, command: list[str] | None) -> str:
    """The described client the command names (capsule/agents/data/clients), else "shell"."""
    return clients.kind_of(command, role.agent.kind)


def mark(kind: str, env: dict[str, str]) -> None:
    """The identity rule's first half: the agent capsule launched, and everything it starts,
    carries capsule's marker naming its client (capsule/agents/clients.py); a shell agent's marker
    makes every command a tool call. Never another session's "agent's view"."""
    env.pop(switches.AGENT_OUT, None)
    env[switches.AGENT_MARKER] = kind if clients.get(kind) else clients.SHELL


def agent_view_env(kind: str, shim_dir: Path, env: dict[str, str]) -> None:
    """Tell the shims which output is the agent's own view (issue 9: only the agent's view changes).

    Claude Code and Codex start a shell per tool call: their env file records that call's
    stdout/stderr identity (and keeps the shims first on PATH). A shell agent's view is the
    stdout/stderr it was launched with. Session-scoped: nothing is written outside the shim dir.
    """
    from capsule import shims  # noqa: PLC0415

    client = clients.get(kind)
    var = client.env_file if client else None    # the file its tool shell sources (agent_env.sh)
    env_file = shim_dir / shims.ENV_FILE
    if var is None:
        try:
            ids = [os.fstat(fd) for fd in (1, 2)]
        except OSError:
            return
        env[switches.AGENT_OUT] = "launch " + " ".join(f"{st.st_dev}:{st.st_ino}" for st in ids)
        return
    if not env_file.is_file():
        return
    previous = env.get(var)
    if previous and previous != str(env_file):
        env[switches.CHAIN_ENV] = previous  # the user's own file still runs, first
    env[var] = str(env_file)


def probe_conflicts() -> list[str]:
    from capsule.shims import conflicts  # noqa: PLC0415

    env = dict(os.environ)
    try:
        return conflicts.hook_conflicts(env) + [f"{t} on PATH: {h}" for t in conflicts.REWRITERS
                                                for h in conflicts.which_all(t, env.get("PATH", ""))]
    except Exception as exc:  # noqa: BLE001 - the probe must not stop the agent
        log.warning("conflict probe failed: %r", exc)
        return []


def which(name: str, path: str) -> str | None:
    """shutil.which on the agent's PATH, not ours (the shims' dir first), and without PATHEXT."""
    if "/" in name:
        return name if os.access(name, os.X_OK) else None
    for d in path.split(":"):
        cand = os.path.join(d or ".", name)
        if os.access(cand, os.X_OK) and not os.path.isdir(cand):
            return cand
    return None
