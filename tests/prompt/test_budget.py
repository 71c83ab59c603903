"""The standing-context count behind `doctor --gate` (INV-6) follows what the plan turns on."""

from __future__ import annotations

from capsule.policy.manifest import load_role
from capsule.ground.switches import Switches
from capsule.prompt.budget import standing_context
from capsule.policy import plan as planning


def test_counts_follow_the_plan():
    role = load_role("python-dev")
    on = standing_context(planning.plan(role, Switches.read({})))
    assert on["parts"]["mcp tool schemas"] > 100
    assert on["parts"]["agent instruction note"] > 10
    assert on["tokens"] == sum(on["parts"].values())
    assert on["tokens"] <= role.context.standing_budget
    off = standing_context(planning.plan(role, Switches.read({"JACKIN_CTX_NO_MCP": "1"})))
    assert off["tokens"] == 0 and off["parts"] == {}


def test_the_counted_tool_surface_is_what_the_server_lists():
    """doctor counts a data file instead of importing the SDK; it must not drift from the server.
    After changing a tool: python -m capsule.mcp.surface --write"""
    from capsule.mcp import surface as live_surface
    from capsule.prompt import surface

    assert surface.load() == live_surface.live()
