"""The read door's tool surface as the agent sees it (tools/list + instructions), as a data file.

Not responsible for serving tools (mcp/server.py) or regenerating the file (mcp/surface.py
--write, which asks the live server). It exists so the standing-context budget can count what
capsule injects without importing the MCP SDK (~0.5 s) or any door.
Invariant: data/mcp_surface.json equals what the live server lists; tests/prompt/test_budget.py
compares the two.
"""

from __future__ import annotations

import json
from pathlib import Path

SURFACE_FILE = Path(__file__).with_name("data") / "mcp_surface.json"


def load() -> dict:
    """{"instructions": str, "tools": [tool dicts]} as last written by `--write`."""
    return json.loads(SURFACE_FILE.read_text(encoding="utf-8"))


def schemas_text(surface: dict) -> str:
    """The text counted as 'mcp tool schemas': the tools list as compact, sorted JSON."""
    return json.dumps(surface["tools"], sort_keys=True)
