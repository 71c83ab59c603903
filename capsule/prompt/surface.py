"""The read door's tool surface as the agent sees it (tools/list + instructions), read from a data file.

Not responsible for serving tools (mcp/mcp_server.py) or counting tokens (budget.py). The server lists exactly
what data/tools.toml says, so `capsule ctx doctor` counts the real surface without the MCP SDK.
Invariant: one source for names, descriptions and argument types; schemas carry no titles or
defaults (the client sends every byte of them on every call).
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

TOOLS_FILE = Path(__file__).with_name("data") / "tools.toml"   # the read door (mcp/mcp_server.py) lists exactly this


@lru_cache(maxsize=1)
def _data() -> dict:
    return tomllib.loads(TOOLS_FILE.read_text(encoding="utf-8"))


def load() -> dict:
    """{"instructions": str, "capabilities": ["tools"], "tools": [{name, description, input_schema}]}."""
    data = _data()
    tools = []
    for t in data["tools"]:
        schema = {"type": "object", "properties": {k: {"type": v} for k, v in t["params"].items()},
                  "required": list(t.get("required", []))}
        tools.append({"name": t["name"], "description": t["description"], "input_schema": schema})
    return {"instructions": data.get("instructions", ""), "capabilities": ["tools"], "tools": tools}


def arguments(name: str, given: dict) -> dict:
    """`given` checked against tool `name`'s declared parameters (a number or flag sent as text is
    taken, as clients do send them); ValueError naming the argument otherwise."""
    tool = next((t for t in _data()["tools"] if t["name"] == name), None)
    if tool is None:
        raise ValueError(f"unknown tool {name!r}; tools: {', '.join(t['name'] for t in _data()['tools'])}")
    params, out = tool["params"], {}
    for key, value in (given or {}).items():
        kind = params.get(key)
        if kind is None:
            raise ValueError(f"{name}: unknown argument {key!r}; arguments: {', '.join(params)}")
        out[key] = _typed(name, key, kind, value)
    missing = [k for k in tool.get("required", []) if k not in out]
    if missing:
        raise ValueError(f"{name}: missing argument {missing[0]!r}")
    return out


def _typed(tool: str, key: str, kind: str, value):
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "integer" and not isinstance(value, bool):
        if isinstance(value, int) or (isinstance(value, str) and value.strip().lstrip("-").isdigit()):
            return int(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    raise ValueError(f"{tool}: argument {key!r} must be of type {kind}, not {value!r}")
