"""ROUTE: which model and effort the agent runs with, decided from the role's [context.routing].

Not responsible for launching anything (the supervisor does) nor for per-agent config files
(agents/). Turns a role into launch arguments and environment, and holds later changes.
Invariant (INV-9): a routing change takes effect only at a task boundary; mid-task requests
wait in `pending` and the current decision never moves under the agent's feet.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources

from capsule.ground.switches import Switches

EFFORTS = ("low", "medium", "high")


@lru_cache(maxsize=1)
def agent_flags() -> dict:
    return tomllib.loads(resources.files("capsule.route").joinpath("data/agent_flags.toml").read_text())


@dataclass(frozen=True)
class Decision:
    model: str | None = None
    effort: str | None = None
    subagent_model: str | None = None
    reason: str = ""


@dataclass
class Router:
    """One agent session's routing; the supervisor owns it."""

    agent_kind: str
    current: Decision
    enabled: bool = True
    pending: Decision | None = None
    history: list[Decision] = field(default_factory=list)

    def request(self, *, model: str | None = None, effort: str | None = None, reason: str) -> None:
        """Ask for a change; it waits for the next task boundary (INV-9)."""
        if not self.enabled:
            return
        if effort is not None and effort not in EFFORTS:
            raise ValueError(f"effort {effort!r}: expected one of {', '.join(EFFORTS)}")
        base = self.pending or self.current
        self.pending = replace(base, model=model or base.model, effort=effort or base.effort, reason=reason)

    def task_boundary(self) -> Decision:
        """The only place the decision moves."""
        if self.pending is not None and self.pending != self.current:
            self.history.append(self.current)
            self.current = self.pending
        self.pending = None
        return self.current

    def launch(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        return launch_args(self.agent_kind, self.current if self.enabled else Decision(), argv, env)


def router_for(role, switches: Switches | None = None, enabled: bool | None = None) -> Router:
    """The role's router; `enabled` is the supervisor's plan when it has one (one source of truth)."""
    if enabled is None:
        sw = switches or Switches.read()
        enabled = not (sw.disable or sw.no_routing) and role.context.subsystems.routing
    routing = dict(role.context.routing or {})
    decision = Decision(model=role.agent.model, effort=routing.get("effort_default"),
                        subagent_model=routing.get("subagent_model"), reason=f"role {role.name}")
    return Router(role.agent.kind, decision if enabled else Decision(reason="routing off"), enabled=enabled)


def launch_args(agent_kind: str, decision: Decision, argv: list[str], env: dict[str, str]):
    """Agent argv and env with the decision applied; flags the user already gave win."""
    flags = agent_flags().get(agent_kind, {})
    argv, env = list(argv), dict(env)
    extra: list[str] = []
    if decision.model and "model_args" in flags and not _has_flag(argv, flags["model_args"][0]):
        extra += [a.format(model=decision.model) for a in flags["model_args"]]
    if decision.effort and "effort_args" in flags and not _has_flag(argv, flags["effort_args"][0], "model_reasoning_effort"):
        extra += [a.format(effort=decision.effort) for a in flags["effort_args"]]
    if decision.subagent_model and "subagent_model_env" in flags:
        env.setdefault(flags["subagent_model_env"], decision.subagent_model)
    if extra and argv:
        if os.path.basename(argv[0]) == flags.get("binary"):
            argv = argv[:1] + extra + argv[1:]
        else:
            argv = argv + extra
    return argv, env


def _has_flag(argv: list[str], flag: str, config_key: str | None = None) -> bool:
    if config_key and any(config_key in a for a in argv):
        return True
    return any(a == flag or a.startswith(flag + "=") for a in argv[1:])
