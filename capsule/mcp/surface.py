"""Regenerates the read door's tool surface data file (capsule/prompt/surface.py) from the live server.

Not responsible for reading the file (prompt/surface.py does, without the MCP SDK) or for serving
tools (server.py). Invariant: `python -m capsule.mcp.surface --write` writes exactly what the live
server lists.
"""

from __future__ import annotations

import json
import sys
import tempfile

import anyio

from capsule.mcp.server import INSTRUCTIONS, ReadDoor, build_server
from capsule.prompt.surface import SURFACE_FILE


def live() -> dict:
    """The surface the server really lists now (imports the SDK: slow, for tests and --write)."""
    with tempfile.TemporaryDirectory() as tmp:
        tools = anyio.run(build_server(ReadDoor(tmp)).list_tools)
    return {"instructions": INSTRUCTIONS,
            "tools": [t.model_dump(exclude_none=True, mode="json") for t in tools]}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        print("usage: python -m capsule.mcp.surface --write   (regenerate capsule/prompt/data/mcp_surface.json)",
              file=sys.stderr)
        raise SystemExit(2)
    SURFACE_FILE.write_text(json.dumps(live(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SURFACE_FILE}")
