"""The standing-context budget (INV-6): what capsule injects into every conversation, in tokens.

Not responsible for writing instructions (agents/notes.py) or serving tools (mcp/). Counts
the MCP tool schemas and instructions and the agent instruction note that the role's plan
turns on, so `capsule ctx doctor --gate` can fail a role that grew past its budget.
Invariant: a part that cannot be measured is listed with 0 tokens and its reason, never hidden.
"""

from __future__ import annotations

from capsule.policy import plan as planning


def _count(text: str, labels: set[str]) -> int:
    """Token count of a fixed text, memoized by content and tokenizer (loading it costs ~60 ms).
    Only exact counts are memoized; the label of every count used is added to `labels`."""
    from capsule.ground import tokens  # noqa: PLC0415
    from capsule.store import memo  # noqa: PLC0415

    k = memo.key(tokens.ENCODING, text)
    n = memo.get("tokens", k)
    if isinstance(n, int):
        labels.add(tokens.LABEL_EXACT)
        return n
    n = tokens.count(text)
    labels.add(tokens.label())
    if tokens.label() == tokens.LABEL_EXACT:
        memo.put("tokens", k, n)
    return n


def standing_context(subsystems: dict[str, planning.Decision]) -> dict:
    """Tokens capsule injects into every conversation: MCP tool schemas + instructions + notes."""
    from capsule.ground import tokens  # noqa: PLC0415

    parts: dict[str, int] = {}
    labels: set[str] = set()
    if subsystems["mcp"].on:
        try:
            from capsule.prompt import surface  # noqa: PLC0415 - a data file: no MCP SDK import

            tools = surface.load()
            parts["mcp tool schemas"] = _count(surface.schemas_text(tools), labels)
            parts["mcp instructions"] = _count(tools["instructions"], labels)
        except Exception as exc:  # noqa: BLE001
            parts[f"mcp (unavailable: {type(exc).__name__})"] = 0
    if subsystems["register"].on:
        try:
            from capsule.agents import notes  # noqa: PLC0415

            parts["agent instruction note"] = _count(notes.block(), labels)
        except Exception:  # noqa: BLE001
            pass
    label = tokens.LABEL_APPROX if tokens.LABEL_APPROX in labels else tokens.LABEL_EXACT
    return {"tokens": sum(parts.values()), "parts": parts, "label": label}


def everything_on() -> dict:
    """The standing context capsule injects with everything on (the role's own figure is doctor's);
    the session-savings report nets it out."""
    try:
        on = {k: planning.Decision(k, True, "report") for k in ("engine", "shims", "mcp", "register", "routing")}
        return standing_context(on)
    except Exception as exc:  # noqa: BLE001 - unmeasurable is reported as such, never hidden
        return {"tokens": 0, "parts": {f"unavailable: {type(exc).__name__}": 0}, "label": "approx"}
