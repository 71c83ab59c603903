"""Shared by the container tests that drive the real clients: handles, fixture workspaces, text of tool results."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.e2e import harness as h

PY = "/opt/capsule/venv/bin/python"
REPO = Path(__file__).resolve().parents[2]
HANDLE = re.compile(r"'(<<ccr:[0-9a-f]{24}>>)'")
LOG = "git log --stat -15"


def text(content) -> str:
    """A tool result's text (Messages API content: a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if c.get("type") == "text")


def workspace(root: Path, owner: tuple[int, int]) -> tuple[Path, str]:
    """The e2e harness's fixture repository under root/shop, every file owned by `owner`."""
    ws = root / "shop"
    ws.mkdir(parents=True)
    head = h.build_workspace(ws)
    for dirpath, dirnames, filenames in os.walk(root):
        for n in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, n), *owner)
    os.chown(root, *owner)
    return ws, head


def shipped_role(tmp: Path, base: str, tag: str) -> Path:
    """A shipped role (roles/<base>.toml) as it is, under a name of this run's own: `capsule up`
    names the state volume after the role, so the volume is this test's alone."""
    name = f"{base}-{tag}-{os.getpid()}"
    text = (REPO / "roles" / f"{base}.toml").read_text()
    assert f'name = "{base}"' in text, f"roles/{base}.toml names another role"
    path = tmp / f"{name}.toml"
    path.write_text(text.replace(f'name = "{base}"', f'name = "{name}"', 1))
    path.chmod(0o644)
    return path
