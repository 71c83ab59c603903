"""HISTORY: the ledger's savings by day, ISO week, month, project or session (`ctx gain --by`).

Not responsible for reading the ledger (ledger.Ledger.rows) or printing (cli/gain.py). Invariant:
each period's figures are sums over its rows, computed as ledger.summarise computes the TOTAL (so
the periods add up to `ctx gain`'s TOTAL); days and weeks are the local calendar's.
"""

from __future__ import annotations

from datetime import datetime

PERIODS = ("day", "week", "month", "project", "session")
KEYS = ("emissions", "raw_tokens", "emitted_tokens", "measured_only", "would_save_tokens")


def key_of(row: dict, by: str) -> str:
    if by == "project":
        return row.get("project") or "(unknown)"
    if by == "session":
        return row.get("scope") or "(no session)"
    when = datetime.fromtimestamp(row["ts"])
    if by == "day":
        return when.strftime("%Y-%m-%d")
    if by == "week":
        year, week, _ = when.isocalendar()
        return f"{year}-W{week:02d}"
    if by == "month":
        return when.strftime("%Y-%m")
    raise ValueError(f"--by {by!r}: one of {', '.join(PERIODS)}")


def _blank(name: str) -> dict:
    return {"key": name, **{k: 0 for k in KEYS}}


def _finish(g: dict) -> dict:
    g["saved_tokens"] = g["raw_tokens"] - g["emitted_tokens"]
    g["saved_pct"] = round(100.0 * g["saved_tokens"] / g["raw_tokens"], 1) if g["raw_tokens"] else 0.0
    return g


def history(rows: list[dict], by: str) -> dict:
    """{"by", "rows": one per period (oldest first; projects and sessions by name), "total"}."""
    groups: dict[str, dict] = {}
    total = _blank("TOTAL")
    for r in rows:
        g = groups.setdefault(key_of(r, by), _blank(key_of(r, by)))
        for acc in (g, total):
            acc["emissions"] += 1
            acc["raw_tokens"] += r["raw_tokens"]
            acc["emitted_tokens"] += r["emitted_tokens"]
            acc["measured_only"] += 0 if r["applied"] else 1
            if not r["applied"] and r.get("would_emit_tokens") is not None:
                acc["would_save_tokens"] += r["raw_tokens"] - r["would_emit_tokens"]
    return {"by": by, "rows": [_finish(groups[k]) for k in sorted(groups)], "total": _finish(total)}
