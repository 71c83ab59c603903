"""GRADUATION ("measurement before mutation"): what a measure-only role's baseline says standard
mode would have saved, so a person turns compression on from evidence.

Reads the ledger's measure-only rows (applied = 0, with the transform's would-emit count) and, when
present, the usage store's calls in the same window. Not responsible for changing the mode or
rendering (cli/doctor). Invariant: every figure is a sum over the named rows; a row without a
would-emit count adds to the window but never to the would-save total.
"""

from __future__ import annotations

from pathlib import Path

from capsule.measure.ledger import Ledger
from capsule.measure.usage import UsageStore


def baseline(ledger_path: Path, usage_path: Path | None = None) -> dict:
    if not ledger_path.exists():
        return {"emissions": 0}
    ledger = Ledger(ledger_path)
    try:
        rows = [r for r in ledger.rows() if not r["applied"]]
    finally:
        ledger.close()
    if not rows:
        return {"emissions": 0}
    t0, t1 = min(r["ts"] for r in rows), max(r["ts"] for r in rows)
    raw = sum(r["raw_tokens"] for r in rows)
    counted = [r for r in rows if r.get("would_emit_tokens") is not None]
    would = sum(r["raw_tokens"] - r["would_emit_tokens"] for r in counted)
    fam: dict[str, int] = {}
    for r in counted:
        fam[r["family"] or "unknown"] = fam.get(r["family"] or "unknown", 0) + r["raw_tokens"] - r["would_emit_tokens"]
    out = {"emissions": len(rows), "first_ts": t0, "last_ts": t1, "window_s": round(t1 - t0, 1),
           "sessions": len({r["scope"] for r in rows if r.get("scope")}), "raw_tokens": raw,
           "would_save_tokens": would, "would_save_pct": round(100.0 * would / raw, 1) if raw else 0.0,
           "without_would_emit": len(rows) - len(counted),
           "top_families": sorted(fam.items(), key=lambda kv: -kv[1])[:5]}
    if usage_path is not None and usage_path.exists():
        out["calls_in_window"] = _calls_between(usage_path, t0, t1)
    return out


def _calls_between(usage_path: Path, t0: float, t1: float) -> int:
    store = UsageStore(usage_path)
    try:
        return sum(1 for c in store.calls(t0) if (c.get("ts") or 0) <= t1)
    finally:
        store.close()


def describe(b: dict) -> str:
    if not b.get("emissions"):
        return "no measure-only emissions recorded yet: run the agent in this role to build a baseline"
    hours = b["window_s"] / 3600
    span = f"{hours:.1f} h" if hours >= 1 else f"{b['window_s'] / 60:.0f} min"
    top = ", ".join(f"{f} {n:,}" for f, n in b["top_families"][:3])
    calls = f", {b['calls_in_window']} model calls" if b.get("calls_in_window") is not None else ""
    return (f"baseline {b['emissions']} emissions over {span} ({b['sessions']} sessions{calls}), "
            f"{b['raw_tokens']:,} raw tokens; standard mode would have saved {b['would_save_tokens']:,} "
            f"({b['would_save_pct']}%)" + (f" — top: {top}" if top else ""))
