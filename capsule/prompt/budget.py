"""The standing-context budget (INV-6): what capsule injects into every conversation, in tokens.

Not responsible for writing instructions (agents/notes.py) or serving tools (mcp/). Counts
the MCP tool schemas and instructions and the agent instruction note that the role's plan
turns on, so `capsule ctx doctor --gate` can fail a role that grew past its budget.
Invariant: a part that cannot be measured is listed with 0 tokens and its reason, never hidden.
"""

from __future__ import annotations

import json
import tempfile

from capsule.supervisor import plan as planning


def standing_context(subsystems: dict[str, planning.Decision]) -> dict:
    """Tokens capsule injects into every conversation: MCP tool schemas + instructions + notes."""
    from capsule.measure import tokens  # noqa: PLC0415

    parts: dict[str, int] = {}
    if subsystems["mcp"].on:
        try:
            import anyio  # noqa: PLC0415

            from capsule.mcp.server import INSTRUCTIONS, ReadDoor, build_server  # noqa: PLC0415

            with tempfile.TemporaryDirectory() as tmp:
                tools = anyio.run(build_server(ReadDoor(tmp)).list_tools)
            schemas = json.dumps([t.model_dump(exclude_none=True, mode="json") for t in tools], sort_keys=True)
            parts["mcp tool schemas"] = tokens.count(schemas)
            parts["mcp instructions"] = tokens.count(INSTRUCTIONS)
        except Exception as exc:  # noqa: BLE001
            parts[f"mcp (unavailable: {type(exc).__name__})"] = 0
    if subsystems["register"].on:
        try:
            from capsule.agents import notes  # noqa: PLC0415

            parts["agent instruction note"] = tokens.count(notes.block())
        except Exception:  # noqa: BLE001
            pass
    return {"tokens": sum(parts.values()), "parts": parts, "label": tokens.label()}
