"""Which subsystems run, and why: the role manifest and the kill switches, decided in one place.

Not responsible for starting anything (supervisor/core.py) or printing (cli/doctor.py).
Invariant: a subsystem is on only when the manifest allows it and no switch forbids it, and every
decision carries the reason a person can act on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from capsule.ground import switches
from capsule.policy.manifest import Role

SUBSYSTEMS = ("engine", "shims", "mcp", "register", "routing", "proxy")


@dataclass(frozen=True)
class Decision:
    name: str
    on: bool
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def plan(role: Role, sw: switches.Switches) -> dict[str, Decision]:
    mode = role.context.mode
    sub = role.context.subsystems
    out: dict[str, Decision] = {}

    def decide(name: str, checks: list[tuple[bool, str]], on_reason: str) -> Decision:
        for failed, reason in checks:
            if failed:
                out[name] = Decision(name, False, reason)
                return out[name]
        out[name] = Decision(name, True, on_reason)
        return out[name]

    master = (sw.disable, f"switch {switches.DISABLE}")
    if sw.measure_only and mode in ("standard", "aggressive"):
        engine_on = f"measure-only (switch {switches.MEASURE_ONLY}; role mode={mode})"
    elif mode == "measure":
        engine_on = "measure-only (role mode=measure)"
    else:
        engine_on = f"role mode={mode}"
    engine = decide("engine", [master, (mode == "off", "role mode=off")], engine_on)
    decide("shims", [master, (sw.no_shims, f"switch {switches.NO_SHIMS}"),
                     (not sub.shims, "role [context.subsystems] shims=false"),
                     (not engine.on, "engine off")], "the role allows it")
    decide("mcp", [master, (sw.no_mcp, f"switch {switches.NO_MCP}"),
                         (not sub.mcp, "role [context.subsystems] mcp=false")], "the role allows it")
    # "register" is the output register of the standing instructions (register, guards, guard
    # lines, codebook: prompt/pack.py), as the seeds mean it; the MCP server's registration with
    # the agent follows "mcp" alone, so JACKIN_CTX_NO_REGISTER never takes the ctx_* tools away.
    decide("register", [master, (sw.no_register, f"switch {switches.NO_REGISTER}"),
                        (not sub.register, "role [context.subsystems] register=false"),
                        (role.agent.kind == "shell", "agent kind=shell has no prompt to put it in")],
           f"agent {role.agent.kind}: [context.output]")
    decide("routing", [master, (sw.no_routing, f"switch {switches.NO_ROUTING}"),
                       (not sub.routing, "role [context.subsystems] routing=false"),
                       (not role.context.routing, "the role has no [context.routing]")], "role [context.routing]")
    decide("proxy", [master, (sw.no_proxy, f"switch {switches.NO_PROXY}"),
                     (not sub.proxy, "role [context.subsystems] proxy=false"),
                     (not engine.on, "engine off"),
                     (role.agent.kind == "shell", "agent kind=shell has no model API to point at")],
           f"agent {role.agent.kind}: tool results and usage through the model API proxy")
    return out


def effective_mode(role: Role, sw: switches.Switches) -> str:
    """The mode the engine runs in after switches: off, measure, standard or aggressive."""
    if sw.disable or role.context.mode == "off":
        return "off"
    if sw.measure_only:
        return "measure"
    return role.context.mode
