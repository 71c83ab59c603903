"""Per-session usage figures from stored call rows: buckets, calls, cost, cache-read share.

Not responsible for ingestion or rendering. Invariant: every figure is a sum over stored rows
(`capsule ctx usage --json` totals are the sums of its sessions).
"""

from __future__ import annotations

from capsule.measure import cost
from capsule.measure.usage import BUCKETS


def read_share(row: dict) -> float | None:
    """cache read / all prompt tokens (fresh + cache read + cache writes); None with no prompt."""
    prompt = row["input_tokens"] + row["cache_read_input_tokens"] + row["cache_creation_5m"] + row["cache_creation_1h"]
    return round(row["cache_read_input_tokens"] / prompt, 4) if prompt else None


def _blank() -> dict:
    return {"calls": 0, **{b: 0 for b in BUCKETS}}


def sessions(calls: list[dict], meta: dict | None = None) -> list[dict]:
    """One dict per (agent, session): calls, buckets, models, cost, share, first/last call time."""
    meta = meta or {}
    groups: dict[tuple[str, str], list[dict]] = {}
    for c in calls:
        groups.setdefault((c["agent"], c["session_id"]), []).append(c)
    out = []
    for (agent, sid), rows in groups.items():
        s = {"agent": agent, "session_id": sid, **_blank()}
        models: dict[str, int] = {}
        for c in rows:
            s["calls"] += 1
            for b in BUCKETS:
                s[b] += c[b]
            models[c.get("model") or "?"] = models.get(c.get("model") or "?", 0) + 1
        s["model"] = max(models, key=models.get)
        s["models"] = sorted(models)
        s["threads"] = len({c.get("thread_id") for c in rows if c.get("thread_id")})
        s["incomplete_calls"] = sum(1 for c in rows if not c.get("complete", 1))
        s["proxy_calls"] = sum(1 for c in rows if c.get("source") == "proxy")
        s.update(cost.total_cost(rows))
        s["cache_read_share"] = read_share(s)
        s["first_ts"] = min((c["ts"] for c in rows if c.get("ts") is not None), default=None)
        s["last_ts"] = max((c["ts"] for c in rows if c.get("ts") is not None), default=None)
        s["cwd"] = (meta.get((agent, sid)) or {}).get("cwd")
        out.append(s)
    out.sort(key=lambda s: (s["first_ts"] or 0, s["session_id"]))
    return out


def totals(session_rows: list[dict]) -> dict:
    t = {"sessions": len(session_rows), **_blank(), "cost_usd": 0.0, "unpriced_calls": 0}
    for s in session_rows:
        t["calls"] += s["calls"]
        for b in BUCKETS:
            t[b] += s[b]
        t["cost_usd"] += s["cost_usd"] or 0.0
        t["unpriced_calls"] += s["unpriced_calls"]
    # every call unpriced: no figure (as cost.total_cost), never a $0 that reads as a price
    t["cost_usd"] = None if t["calls"] and t["unpriced_calls"] == t["calls"] else round(t["cost_usd"], 6)
    t["cache_read_share"] = read_share(t)
    return t
