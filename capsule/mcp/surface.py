"""The read door's tool surface as the agent sees it (tools/list + instructions), kept as a data file.

Not responsible for serving tools (server.py) or counting tokens (prompt/budget.py). It exists so
`capsule ctx doctor` can count what capsule injects without importing the MCP SDK (~0.5 s).
Invariant: data/surface.json equals what the live server lists; a test compares the two, and
`python -m capsule.mcp.surface --write` regenerates the file after a tool changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SURFACE_FILE = Path(__file__).with_name("data") / "surface.json"


def load() -> dict:
    """{"instructions": str, "tools": [tool dicts]} as last written by `--write`."""
    return json.loads(SURFACE_FILE.read_text(encoding="utf-8"))


def live() -> dict:
    """The surface the server really lists now (imports the SDK: slow, for tests and --write)."""
    import tempfile

    import anyio

    from capsule.mcp.server import INSTRUCTIONS, ReadDoor, build_server

    with tempfile.TemporaryDirectory() as tmp:
        tools = anyio.run(build_server(ReadDoor(tmp)).list_tools)
    return {"instructions": INSTRUCTIONS,
            "tools": [t.model_dump(exclude_none=True, mode="json") for t in tools]}


def schemas_text(surface: dict) -> str:
    """The text counted as 'mcp tool schemas': the tools list as compact, sorted JSON."""
    return json.dumps(surface["tools"], sort_keys=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        print("usage: python -m capsule.mcp.surface --write   (regenerate data/surface.json from the server)",
              file=sys.stderr)
        raise SystemExit(2)
    SURFACE_FILE.write_text(json.dumps(live(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SURFACE_FILE}")
