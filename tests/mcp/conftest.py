"""An MCP session with the real `capsule mcp serve` over stdio, through the official SDK client."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIG_PY = "\n\n".join(
    f"def function_{i}(alpha, beta):\n    \"\"\"Doc {i}.\"\"\"\n" + "".join(f"    x{j} = alpha + {j}\n" for j in range(12))
    + "    return x0\n" for i in range(40))


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "big.py").write_text(BIG_PY)
    (ws / "pkg" / "small.py").write_text("def tiny():\n    return 1\n")
    (ws / "pkg" / "parser.py").write_text("class TokenParser:\n    def parse_header(self, raw):\n        return raw\n")
    (ws / "README.md").write_text("# Demo\n\nIntro.\n\n## Install\n\npip install demo\n\n## Usage\n\nRun it.\n")
    (ws / ".gitignore").write_text("secret/\n")
    (ws / "secret").mkdir()
    (ws / "secret" / "keys.txt").write_text("TokenParser hidden\n")
    (tmp_path / "outside.txt").write_text("not yours\n")
    return ws


class Session:
    """Runs tool calls in one server process: Session(ws).run([("ctx_read", {...}), ...])."""

    def __init__(self, workspace: Path, state_dir: Path, extra_env: dict | None = None):
        self.params = StdioServerParameters(
            command=sys.executable, args=["-m", "capsule", "mcp", "serve", "--root", str(workspace)],
            env={"JACKIN_CTX_STATE_DIR": str(state_dir), "PATH": os.environ.get("PATH", ""),
                 **(extra_env or {})},
            cwd=str(workspace))

    async def _run(self, calls):
        out = []
        async with stdio_client(self.params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for name, args, *meta in calls:
                    if name == "tools/list":
                        out.append(await session.list_tools())
                    else:
                        out.append(await session.call_tool(name, args, meta=meta[0] if meta else None))
        return out

    def run(self, calls):
        return asyncio.run(self._run(calls))


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


@pytest.fixture
def session(workspace, state_dir):
    return Session(workspace, state_dir)
