"""The fleet report as one HTML page, drawn by the same renderer as `capsule ctx report --html`
(capsule.measure.report_html): the fleet's figures, its groups and its families in that shape.

Not responsible for any figure (capsule.fleet.fleet_report) or for drawing (the shared template).
Invariant: every number on the page is a field of `fleet report --json`'s dict.
"""

from __future__ import annotations

from capsule.fleet.fleet_report import GROUPS
from capsule.measure import report_html


def view(data: dict) -> dict:
    """The fleet report in the shape the shared page reads (figures, totals, ledger, groups)."""
    fleet = data["fleet"]
    families: dict[str, dict] = {}
    for cap in data["capsules"]:
        for f in cap["families"]:
            acc = families.setdefault(f["family"], {"name": f["family"], "emissions": 0, "raw_tokens": 0,
                                                    "saved_tokens": 0, "would_save_tokens": 0})
            for k in ("emissions", "raw_tokens", "would_save_tokens"):
                acc[k] += f[k]
            acc["saved_tokens"] += f["raw_tokens"] - f["emitted_tokens"]
    by_family = sorted(families.values(), key=lambda t: (-(t["saved_tokens"] + t["would_save_tokens"]), t["name"]))
    u = fleet["usage"]
    return {"figures": fleet["figures"], "window": data["window"],
            "totals": {"sessions": u["sessions"], "calls": u["calls"], "cost_usd": u["cost_usd"],
                       "cache_read_share": u["cache_read_share"]},
            "ledger": {"by_family": by_family, "by_door": None, "emissions": fleet["total"]["emissions"]},
            "groups": {g: data[f"by_{g}"] for g in GROUPS}}


def render(data: dict) -> str:
    return report_html.render(view(data), title="capsule fleet report")
