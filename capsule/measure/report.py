"""REPORT DATA: one dict with everything `capsule ctx report` shows, from the stored rows.

Usage and cost per session, cost by bucket over time, cache health, net savings (by family and by
door), discovery. Not responsible for ingestion (the CLI ingests first) or for drawing (report_text,
report_html). Invariant: the same rows always give the same report (no clock reads beyond the
bin edges derived from the rows themselves).
"""

from __future__ import annotations

from capsule.measure import cache, cost, discovery, figures, savings, summary
from capsule.measure.ledger import summarise
from capsule.measure.usage import BUCKETS


def _bin_seconds(span: float) -> int:
    if span <= 2 * 3600:
        return 300
    if span <= 2 * 86400:
        return 3600
    return 86400


def timeline(calls: list[dict]) -> dict:
    """Cost (USD) and tokens per bucket per time bin; unpriced calls add tokens only."""
    stamped = [c for c in calls if c.get("ts") is not None]
    if not stamped:
        return {"bin_seconds": 0, "bins": [], "unpriced_calls": 0, "upstream_cost_calls": 0}
    t0 = min(c["ts"] for c in stamped)
    t1 = max(c["ts"] for c in stamped)
    step = _bin_seconds(t1 - t0)
    start = int(t0 // step * step)
    bins: dict[int, dict] = {}
    unpriced = upstream = 0
    for c in stamped:
        key = int((c["ts"] - start) // step)
        b = bins.setdefault(key, {"start": start + key * step, "usd": {k: 0.0 for k in BUCKETS},
                                  "tokens": {k: 0 for k in BUCKETS}, "other_usd": 0.0, "calls": 0})
        b["calls"] += 1
        for k in BUCKETS:
            b["tokens"][k] += c[k]
        per = cost.bucket_costs(c)
        if per is not None:
            for k, v in per.items():
                b["usd"][k] += v
        else:
            total = cost.call_cost(c)
            if total.usd is None:
                unpriced += 1
            else:
                upstream += 1
                b["other_usd"] += total.usd     # an upstream total has no per-bucket split
    return {"bin_seconds": step, "bins": [bins[k] for k in sorted(bins)], "unpriced_calls": unpriced,
            "upstream_cost_calls": upstream}


def build(calls: list[dict], events: list[dict], session_meta: dict, ledger_rows: list[dict],
          standing: dict) -> dict:
    sessions = summary.sessions(calls, session_meta)
    saved = savings.analyse(events, ledger_rows, standing)
    totals = summary.totals(sessions)
    saved_totals = savings.totals(saved)
    return {
        "figures": figures.figures(summarise(ledger_rows)["total"], saved_totals, totals),
        "sessions": sessions,
        "totals": totals,
        "timeline": timeline(calls),
        "cache": cache.analyse(calls, events, ledger_rows),
        "savings": {"sessions": saved, "totals": saved_totals},
        "ledger": _ledger_rollup(ledger_rows),
        "discovery": discovery.analyse(events),
    }


def _ledger_rollup(rows: list[dict]) -> dict:
    """Savings by family and by door over every ledger row (sessions or not)."""
    fam: dict[str, dict] = {}
    doors: dict[str, dict] = {}
    for r in rows:
        saved = r["raw_tokens"] - r["emitted_tokens"] if r.get("applied") else 0
        would = (r["raw_tokens"] - r["would_emit_tokens"]) if not r.get("applied") and \
            r.get("would_emit_tokens") is not None else 0
        for table, key in ((fam, r.get("family") or "unknown"), (doors, savings.door(r))):
            t = table.setdefault(key, {"name": key, "emissions": 0, "raw_tokens": 0, "saved_tokens": 0,
                                       "would_save_tokens": 0})
            t["emissions"] += 1
            t["raw_tokens"] += r["raw_tokens"]
            t["saved_tokens"] += saved
            t["would_save_tokens"] += would
    order = lambda d: sorted(d.values(), key=lambda t: -(t["saved_tokens"] + t["would_save_tokens"]))  # noqa: E731
    return {"by_family": order(fam), "by_door": order(doors), "emissions": len(rows)}
