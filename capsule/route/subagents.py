"""Session-scoped subagent definitions with the lanes' model and effort pins (Claude Code --agents),
and the advisor a cheaper main lane consults for plans and reviews.

Not responsible for what a subagent is told beyond its role (the prompt layer extends the prompt
through EXTENSIONS) nor for launching (route/policy.py passes the JSON). Invariant: the same lanes
give the same bytes (sorted keys), so a session's definitions are stable from its first request on.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from functools import lru_cache
from importlib import resources

from capsule.route.lanes import Table, client_effort, client_knobs

# Each: (task class, definition dict) -> definition dict. The prompt layer registers its report
# contracts here; the model/effort pins are applied after, so an extension cannot drop them.
EXTENSIONS: list[Callable[[str, dict], dict]] = []


@lru_cache(maxsize=1)
def templates() -> dict:
    return tomllib.loads(resources.files("capsule.route").joinpath("data/subagents.toml").read_text())


def definitions(table: Table, kind: str = "claude") -> dict[str, dict]:
    """Agent name -> definition, for the read-only classes whose lane pins a model or an effort."""
    names = client_knobs().get(kind, {}).get("agent_definitions", {})
    out: dict[str, dict] = {}
    for cls, name in sorted(names.items()):
        lane = table[cls]
        if not lane.model and not lane.effort:
            continue      # nothing to pin: the client's own built-in stays
        tpl = templates().get(cls)
        if tpl is None:
            continue
        d = {"description": tpl["description"], "prompt": tpl["prompt"], "tools": list(tpl["tools"])}
        for ext in EXTENSIONS:
            d = ext(cls, d)
        if lane.model:
            d["model"] = lane.model
        if lane.effort:
            d["effort"] = client_effort(kind, lane.effort)
        out[tpl.get("name", name)] = d
    if table.advisor and kind == "claude":
        tpl = templates()["advisor"]
        d = {"description": tpl["description"], "prompt": tpl["prompt"], "tools": list(tpl["tools"])}
        for ext in EXTENSIONS:
            d = ext("advisor", d)
        out[tpl["name"]] = {**d, "model": table.advisor}
    return out


def agents_json(table: Table, kind: str = "claude") -> str | None:
    defs = definitions(table, kind)
    return json.dumps(defs, sort_keys=True, separators=(",", ":")) if defs else None
