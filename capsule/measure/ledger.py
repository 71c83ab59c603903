"""LEDGER: what the ledger's rows add up to — per family and in total, saved or would-save.

The rows themselves are written and read through the store's one API (capsule/store/emissions.py:
Ledger, Row), named here for the readers that reach them as the measure layer's ledger.
Not responsible for storing rows, computing savings (the pipeline does) or rendering (cli/gain).
Invariant: a summary is a pure function of the rows it is given.
"""

from __future__ import annotations

from capsule.store.emissions import ALL_COLUMNS, SUMMARY_COLUMNS, Ledger, Row, storable  # noqa: F401 - the rows' API


def summarise(rows: list[dict]) -> dict:
    """Per family and total: raw, emitted, saved %; measure-only rows add to 'would save' instead."""
    fams: dict[str, dict] = {}
    for r in rows:
        f = fams.setdefault(r["family"] or "unknown", {"family": r["family"] or "unknown", "emissions": 0,
                                                        "raw_tokens": 0, "emitted_tokens": 0, "measured_only": 0,
                                                        "would_save_tokens": 0})
        f["emissions"] += 1
        f["raw_tokens"] += r["raw_tokens"]
        f["emitted_tokens"] += r["emitted_tokens"]
        f["measured_only"] += 0 if r["applied"] else 1
        if not r["applied"] and r.get("would_emit_tokens") is not None:
            f["would_save_tokens"] += r["raw_tokens"] - r["would_emit_tokens"]
    total = {"family": "TOTAL", "emissions": 0, "raw_tokens": 0, "emitted_tokens": 0, "measured_only": 0,
             "would_save_tokens": 0}
    for f in fams.values():
        for k in ("emissions", "raw_tokens", "emitted_tokens", "measured_only", "would_save_tokens"):
            total[k] += f[k]
    for f in [*fams.values(), total]:
        f["saved_tokens"] = f["raw_tokens"] - f["emitted_tokens"]
        f["saved_pct"] = round(100.0 * f["saved_tokens"] / f["raw_tokens"], 1) if f["raw_tokens"] else 0.0
    approx = any(r["token_label"] != "cl100k_base" for r in rows)
    return {"families": sorted(fams.values(), key=lambda f: -f["raw_tokens"]), "total": total,
            "approximate": approx}
