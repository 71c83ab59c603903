"""What every agent config writer shares: the marker, the server command, atomic writes, errors.

Not responsible for any one agent's file format (claude.py, codex.py).
Invariant: a file is replaced only by rename of a fully written temp file in the same directory,
keeping the original's permissions; nothing is written when the content would not change.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

SERVER_NAME = "capsule"
MARKER_KEY = "CAPSULE_MANAGED_BY"          # env entry that marks a server entry as ours
MARKER_VALUE = "capsule mcp register"


class ConfigError(ValueError):
    """An agent config we refuse to touch (corrupt, or a foreign entry under our name)."""


def server_command() -> tuple[str, list[str]]:
    """How an agent launches the read door: the installed `capsule`, else this Python -m capsule."""
    exe = shutil.which("capsule")
    if exe:
        return exe, ["mcp", "serve"]
    return sys.executable, ["-m", "capsule", "mcp", "serve"]


def is_ours(entry: object) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("env"), dict) \
        and entry["env"].get(MARKER_KEY) == MARKER_VALUE


def write_atomic(path: Path, text: str) -> bool:
    """Write `text` to `path` via temp + rename; False (and no write) when unchanged."""
    path = Path(path)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600 if path.name.startswith(".") else 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
