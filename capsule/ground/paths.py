"""Where capsule keeps things: the one place every path is decided.

Not responsible for creating anything except the state directory itself.
Invariant: every module asks here; no other module spells a state path.
"""

from __future__ import annotations

import os
from pathlib import Path

from capsule.ground import switches

CONTAINER_STATE_DIR = Path("/state/context")
CONTAINER_SHIM_DIR = Path("/opt/capsule/shims")
ARCHIVE_DB = "archive.db"
LEDGER_DB = "ledger.db"
USAGE_DB = "usage.db"
STUBS_FILE = "stubs.json"
INDEX_DIR = "index"
LOG_FILE = "capsule.log"
SOCKET_NAME = "engine.sock"
TRUST_FILE = "trusted_filters.json"
PROXY_DB = "proxy.db"          # the proxy door's memo of rewritten tool results (INV-1)
PROXY_STATE = "proxy.json"     # the running proxy's address and upstreams, for doctor


def state_dir() -> Path:
    """$JACKIN_CTX_STATE_DIR, else /state/context inside the container, else XDG state."""
    explicit = os.environ.get(switches.STATE_DIR)
    if explicit:
        path = Path(explicit)
    elif CONTAINER_STATE_DIR.is_dir() and os.access(CONTAINER_STATE_DIR, os.W_OK):
        path = CONTAINER_STATE_DIR
    else:
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        path = Path(xdg) / "capsule"
    path.mkdir(parents=True, exist_ok=True)
    return path


def archive_path() -> Path:
    return state_dir() / ARCHIVE_DB


def ledger_path() -> Path:
    return state_dir() / LEDGER_DB


def usage_path() -> Path:
    """Per-call token usage from transcripts and the proxy (capsule.measure.usage)."""
    return state_dir() / USAGE_DB


def stubs_path() -> Path:
    return state_dir() / STUBS_FILE


def index_dir() -> Path:
    return state_dir() / INDEX_DIR


def log_path() -> Path:
    return state_dir() / LOG_FILE


def socket_path() -> Path:
    """The supervisor's control socket; $JACKIN_CTX_SOCKET overrides."""
    explicit = os.environ.get(switches.SOCKET)
    return Path(explicit) if explicit else state_dir() / SOCKET_NAME


def trust_path() -> Path:
    return state_dir() / TRUST_FILE


def proxy_db_path() -> Path:
    return state_dir() / PROXY_DB


def proxy_state_path() -> Path:
    return state_dir() / PROXY_STATE
