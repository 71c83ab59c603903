"""STATUSLINE: the one line Claude Code's `statusLine` command shows: tokens capsule saved this
session, the session's cost, the 5-hour window used and when it resets.

Claude Code runs the command after each message with a JSON object on stdin (its own docs, in the
client: session_id, transcript_path, cwd, model, workspace, version, cost.total_cost_usd,
context_window, rate_limits.five_hour.used_percentage and .resets_at (epoch seconds), …).
Not responsible for registering the command (agents/session.py) or for any other figure. Invariant:
one line, in well under 50 ms (benchmarks/bench_startup.py has the row): the ledger is read with
one indexed query, read-only, and nothing heavier than apsw is imported; a missing or unreadable
ledger or bad input gives a shorter line, never an error on the user's screen.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import apsw

LEDGER_DB = "ledger.db"


def _state_dir() -> Path:
    """The state dir as paths.state_dir() finds it, without creating it (a statusline writes nothing)."""
    explicit = os.environ.get("JACKIN_CTX_STATE_DIR")
    if explicit:
        return Path(explicit)
    if Path("/state/context").is_dir():
        return Path("/state/context")
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "capsule"


def _session_start(data: dict) -> float | None:
    """When the session began: its transcript's first timestamped line (Claude Code writes one JSON
    object a line, each with an ISO `timestamp`)."""
    path = data.get("transcript_path")
    if not isinstance(path, str) or not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            for _ in range(20):
                line = f.readline()
                if not line:
                    break
                stamp = json.loads(line).get("timestamp") if line.strip().startswith("{") else None
                if isinstance(stamp, str):
                    from datetime import datetime  # noqa: PLC0415 - bench_startup "capsule statusline"

                    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (OSError, ValueError, AttributeError):
        return None
    return None


def saved(state: Path, session_id: str | None, since: float | None) -> tuple[int, int] | None:
    """(tokens saved, emissions) of the ledger rows of this session: its scope, else since its start."""
    path = state / LEDGER_DB
    if not path.is_file():
        return None

    try:
        conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        conn.set_busy_timeout(20)
        try:
            q = "SELECT coalesce(sum(raw_tokens - emitted_tokens), 0), count(*) FROM emissions WHERE "
            row = conn.execute(q + "scope = ?", (session_id or "",)).fetchone()
            if not row[1] and since is not None:
                row = conn.execute(q + "ts >= ?", (since,)).fetchone()
            return int(row[0]), int(row[1])
        finally:
            conn.close()
    except apsw.Error:
        return None


def _k(n: int) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,}"


def line(data: dict, state: Path | None = None, now: float | None = None) -> str:
    """The status line for Claude Code's statusLine JSON `data`."""
    state = state or _state_dir()
    parts = []
    got = saved(state, data.get("session_id") if isinstance(data.get("session_id"), str) else None,
                _session_start(data))
    parts.append("capsule: no savings yet" if not got or not got[1] else f"capsule saved {_k(got[0])} tok")
    cost = (data.get("cost") or {}).get("total_cost_usd") if isinstance(data.get("cost"), dict) else None
    if isinstance(cost, (int, float)):
        parts.append(f"${cost:.2f}")
    five = ((data.get("rate_limits") or {}).get("five_hour") or {}) if isinstance(data.get("rate_limits"), dict) else {}
    used, resets = five.get("used_percentage"), five.get("resets_at")
    if isinstance(used, (int, float)):
        text = f"5h {used:.0f}%"
        if isinstance(resets, (int, float)):
            left = max(0, int(resets - (now or time.time())))
            text += f" (resets in {left // 3600}h{left % 3600 // 60:02d})"
        parts.append(text)
    return " · ".join(parts)
