"""LANES: which model and effort each task class runs on, resolved from the role, env and user flags.

Not responsible for applying anything (route/policy.py turns a table into launch flags; the proxy
pins a conversation's first request) nor for deciding when to degrade (route/governor.py).
Invariant: every entry says where it came from (role file:line, an env variable, a user flag, or
the client's own default); precedence is client default < role < env < user flag, as the clients
themselves apply it, so capsule never passes a flag that would override what the user set.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from importlib import resources

from capsule.policy.manifest import line_of

CLASSES = ("main", "plan", "explore", "subagent", "background")
ROUTINE = ("explore", "subagent", "background")    # degrade first; main/plan only when the role allows
EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")
DEFAULT_DEGRADE_AT = 0.8


@lru_cache(maxsize=1)
def client_knobs() -> dict:
    """Per client: the env variables and flags that set a class's model/effort (data/agent_flags.toml)."""
    return tomllib.loads(resources.files("capsule.route").joinpath("data/agent_flags.toml").read_text())


@dataclass(frozen=True)
class Lane:
    task_class: str
    model: str | None = None
    effort: str | None = None
    degraded_model: str | None = None
    degraded_effort: str | None = None
    model_from: str = "client default"
    effort_from: str = "client default"

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def routine(self) -> bool:
        return self.task_class in ROUTINE

    def degraded(self) -> "Lane":
        """This lane past the threshold: the cheaper choice where the role names one."""
        return replace(self, model=self.degraded_model or self.model, effort=self.degraded_effort or self.effort)


@dataclass(frozen=True)
class Table:
    lanes: dict[str, Lane]
    degrade_at: float = DEFAULT_DEGRADE_AT
    degrade_main: bool = False
    budget_usd_day: float | None = None
    budget_usd_session: float | None = None
    advisor: str | None = None          # the model the main lane consults for plans and reviews

    def __getitem__(self, task_class: str) -> Lane:
        return self.lanes[task_class]

    def may_degrade(self, task_class: str) -> bool:
        return task_class in ROUTINE or self.degrade_main

    def as_dict(self) -> dict:
        return {"lanes": [self.lanes[c].as_dict() for c in CLASSES], "degrade_at": self.degrade_at,
                "degrade_main": self.degrade_main, "budget_usd_day": self.budget_usd_day,
                "budget_usd_session": self.budget_usd_session, "advisor": self.advisor}


def _role_line(role, keys: tuple[str, ...]) -> str:
    try:
        line = line_of(role.path.read_text(encoding="utf-8"), keys)
    except OSError:
        line = 1
    return f"role {role.path.name}:{line}"


def from_role(role) -> Table:
    """The role's own table: `[context.routing.lanes.*]`, with the older keys as fallbacks
    (agent.model and effort_default for the main lane, subagent_model for general subagents)."""
    routing = dict(role.context.routing or {})
    spec = routing.get("lanes") or {}
    lanes: dict[str, Lane] = {}
    for cls in CLASSES:
        own = spec.get(cls) or {}
        lane = Lane(cls, degraded_model=own.get("degraded_model"), degraded_effort=own.get("degraded_effort"))
        base = ("context", "routing", "lanes", cls)
        if own.get("model"):
            lane = replace(lane, model=own["model"], model_from=_role_line(role, base + ("model",)))
        elif cls == "main" and role.agent.model:
            lane = replace(lane, model=role.agent.model, model_from=_role_line(role, ("agent", "model")))
        elif cls == "subagent" and routing.get("subagent_model"):
            lane = replace(lane, model=routing["subagent_model"],
                           model_from=_role_line(role, ("context", "routing", "subagent_model")))
        if own.get("effort"):
            lane = replace(lane, effort=own["effort"], effort_from=_role_line(role, base + ("effort",)))
        elif cls == "main" and routing.get("effort_default"):
            lane = replace(lane, effort=routing["effort_default"],
                           effort_from=_role_line(role, ("context", "routing", "effort_default")))
        lanes[cls] = lane
    return Table(lanes, degrade_at=float(routing.get("degrade_at", DEFAULT_DEGRADE_AT)),
                 degrade_main=bool(routing.get("degrade_main", False)),
                 budget_usd_day=routing.get("budget_usd_day"), budget_usd_session=routing.get("budget_usd_session"),
                 advisor=routing.get("advisor"))


def resolve(role, kind: str, env: dict[str, str] | None = None, argv: list[str] | None = None) -> Table:
    """The table the agent really runs with: the role's, then the client's env, then user flags."""
    table = from_role(role)
    knobs = client_knobs().get(kind, {})
    lanes = dict(table.lanes)
    env = env or {}
    for spec in knobs.get("env", []):           # [[claude.env]] name, sets (model|effort), classes
        value = env.get(spec["name"])
        if not value or value == "inherit":
            continue
        for cls in spec["classes"]:
            lanes[cls] = replace(lanes[cls], **{spec["sets"]: value, f"{spec['sets']}_from": f"env {spec['name']}"})
    user = user_flags(kind, argv or [])
    for what, value in user.items():
        lanes["main"] = replace(lanes["main"], **{what: value, f"{what}_from": f"user flag {knobs.get(what + '_args', ['?'])[0]}"})
    return replace(table, lanes=lanes)


def user_flags(kind: str, argv: list[str]) -> dict[str, str]:
    """Model and effort the user put on the agent's own command line (they always win)."""
    out: dict[str, str] = {}
    knobs = client_knobs().get(kind, {})
    model_flags = set(knobs.get("model_flags", []))
    effort_flags = set(knobs.get("effort_flags", []))
    effort_key = knobs.get("effort_config_key")
    for i, arg in enumerate(argv[1:], start=1):
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        name, _, inline = arg.partition("=")
        if name in model_flags:
            value = inline if inline else nxt
            if value:
                out["model"] = value
        elif name in effort_flags:
            value = inline if inline else nxt
            if value:
                out["effort"] = value
        elif effort_key and arg in ("-c", "--config") and nxt and nxt.replace(" ", "").startswith(effort_key + "="):
            out["effort"] = nxt.split("=", 1)[1].strip().strip("\"'")
    return out


def client_effort(kind: str, effort: str | None) -> str | None:
    """A role's effort in the client's own levels (Claude has no `minimal`, Codex no `max`)."""
    if effort is None:
        return None
    mapping = client_knobs().get(kind, {}).get("effort_map", {})
    return mapping.get(effort, effort)
