"""ROUTE: which model and effort the agent runs with, decided from the role's [context.routing].

Not responsible for launching anything (the supervisor does), for resolving the lane table
(route/lanes.py) or for the subagent definitions' text (route/subagents.py). Turns a table into
launch arguments and environment, and holds later changes.
Invariant (INV-9): a routing change takes effect only at a task boundary; mid-task requests
wait in `pending` and the current decision never moves under the agent's feet. Only what the
role set is applied: a value from the user's env or flags is the user's, and stays.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace

from capsule.ground.switches import Switches
from capsule.route import lanes as lanes_mod
from capsule.route.lanes import EFFORTS, Lane, Table, client_effort, client_knobs
from capsule.route import governor
from capsule.route import subagents


def agent_flags() -> dict:
    return client_knobs()


@dataclass(frozen=True)
class Decision:
    model: str | None = None
    effort: str | None = None
    subagent_model: str | None = None
    background_model: str | None = None
    plan_effort: str | None = None
    agents_json: str | None = None       # Claude Code --agents: pinned read-only subagents
    reason: str = ""


def _from_role(lane: Lane, what: str) -> str | None:
    return getattr(lane, what) if getattr(lane, f"{what}_from").startswith("role") else None


def decision_for(table: Table, kind: str, reason: str) -> Decision:
    """What capsule itself passes at launch: the role-sourced entries of the table."""
    main = table["main"]
    sub = [table[c] for c in ("plan", "explore", "subagent")]
    shared = {lane.model for lane in sub}
    subagent_model = None
    if len(shared) == 1 and all(_from_role(lane, "model") for lane in sub):
        subagent_model = sub[0].model       # one model for every subagent: the env variable says it
    elif _from_role(table["subagent"], "model") and not any(table[c].model for c in ("plan", "explore")):
        subagent_model = table["subagent"].model   # the older `subagent_model` key alone
    role_only = replace(table, lanes={c: replace(lane, model=_from_role(lane, "model"), effort=_from_role(lane, "effort"))
                                      for c, lane in table.lanes.items()})
    return Decision(model=_from_role(main, "model"), effort=_from_role(main, "effort"),
                    subagent_model=subagent_model, background_model=_from_role(table["background"], "model"),
                    plan_effort=_from_role(table["plan"], "effort"),
                    agents_json=subagents.agents_json(role_only, kind) if kind == "claude" else None,
                    reason=reason)


@dataclass
class Router:
    """One agent session's routing; the supervisor owns it."""

    agent_kind: str
    current: Decision
    enabled: bool = True
    table: Table | None = None
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


def router_for(role, switches: Switches | None = None, enabled: bool | None = None, *, kind: str | None = None,
               env: dict[str, str] | None = None, argv: list[str] | None = None) -> Router:
    """The role's router; `enabled` is the supervisor's plan when it has one (one source of truth)."""
    if enabled is None:
        sw = switches or Switches.read()
        enabled = not (sw.disable or sw.no_routing) and role.context.subsystems.routing
    kind = kind or role.agent.kind
    table = lanes_mod.resolve(role, kind, env, argv)
    decision = decision_for(table, kind, f"role {role.name}")
    return Router(kind, decision if enabled else Decision(reason="routing off"), enabled=enabled, table=table)


def degrade_at_start(router: Router, utilization: float, window: str | None,
                     calls: list[dict] | None = None) -> list:
    """Session start is a task boundary: lanes past the threshold launch degraded, a change of model
    only where it pays for its cache write on the recorded `calls`. Returns the governor's choices
    (one per class that has something to decide) for the route log."""
    if not router.enabled or router.table is None:
        return []
    choices, lanes = [], dict(router.table.lanes)
    for cls, lane in router.table.lanes.items():
        if not (lane.model or lane.effort or lane.degraded_model or lane.degraded_effort):
            continue
        choice = governor.choose(router.table, cls, utilization, window, calls)
        choices.append((cls, choice))
        if choice.degraded:
            c = choice.lane
            lanes[cls] = replace(c, model_from=("role (degraded)" if c.model != lane.model else c.model_from),
                                 effort_from=("role (degraded)" if c.effort != lane.effort else c.effort_from))
    if any(ch.degraded for _, ch in choices):
        router.table = replace(router.table, lanes=lanes)
        router.current = decision_for(router.table, router.agent_kind, router.current.reason + ", degraded at start")
    return choices


def launch_args(agent_kind: str, decision: Decision, argv: list[str], env: dict[str, str]):
    """Agent argv and env with the decision applied; flags the user already gave win."""
    flags = client_knobs().get(agent_kind, {})
    argv, env = list(argv), dict(env)
    extra: list[str] = []
    if decision.model and "model_args" in flags and not any(_has_flag(argv, f) for f in flags.get("model_flags", [])):
        extra += [a.format(model=decision.model) for a in flags["model_args"]]
    effort = client_effort(agent_kind, decision.effort)
    if effort and "effort_args" in flags and not _has_flag(argv, flags["effort_args"][0], "model_reasoning_effort"):
        extra += [a.format(effort=effort) for a in flags["effort_args"]]
    plan_effort = client_effort(agent_kind, decision.plan_effort)
    if plan_effort and "plan_effort_args" in flags and not _has_flag(argv, "", "plan_mode_reasoning_effort"):
        extra += [a.format(effort=plan_effort) for a in flags["plan_effort_args"]]
    if decision.subagent_model and "subagent_model_env" in flags:
        env.setdefault(flags["subagent_model_env"], decision.subagent_model)
    if decision.background_model and "background_model_env" in flags:
        env.setdefault(flags["background_model_env"], decision.background_model)
    if decision.agents_json and agent_kind == "claude":
        argv = _merge_agents(argv, decision.agents_json, extra)
    if extra and argv:
        at = next((i for i, w in enumerate(argv) if os.path.basename(w) == flags.get("binary")), None)
        if at is not None:
            argv = argv[:at + 1] + extra + argv[at + 1:]
        else:
            argv = argv + extra
    return argv, env


def _merge_agents(argv: list[str], ours: str, extra: list[str]) -> list[str]:
    """Our pinned definitions next to the user's own --agents (theirs win, name by name)."""
    if "--agents" in argv[1:]:
        i = argv.index("--agents", 1)
        if i + 1 < len(argv):
            try:
                theirs = json.loads(argv[i + 1])
                if isinstance(theirs, dict):
                    argv = list(argv)
                    argv[i + 1] = json.dumps({**json.loads(ours), **theirs}, sort_keys=True, separators=(",", ":"))
            except ValueError:
                pass        # theirs is not JSON: the client reports it; ours stay out
        return argv
    extra += ["--agents", ours]
    return argv


def _has_flag(argv: list[str], flag: str, config_key: str | None = None) -> bool:
    if config_key and any(config_key in a for a in argv):
        return True
    return bool(flag) and any(a == flag or a.startswith(flag + "=") for a in argv[1:])
