"""`capsule ctx quota [--json] [--role R]`: rate-limit windows, burn rate, projection, session shares.

Not responsible for computing the picture (capsule.route.quota.picture) or deciding (route/governor.py).
Invariant: the figures are the headers' own (utilization 0-1, reset as epoch seconds); the billing
regime the figures are for is always named; with an API key and a role budget, spend windows from
the cost engine are added and marked as such.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from capsule.ground.terminal import visible


def register(sub) -> None:
    p = sub.add_parser("quota", help="rate-limit windows: utilization, reset, burn rate, projection, session shares",
                       description="The account's rate-limit windows as the proxy saw them in response headers "
                       "(and Codex rollouts): utilization, status, reset time, burn rate, projected time to the "
                       "limit, each session's share; with an API key, the role's spend budgets too.")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument("--role", help="role whose spend budget applies (default: $JACKIN_CTX_ROLE)")
    p.set_defaults(func=cmd_quota)


def _t(ts) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render(q: dict) -> str:
    out = [f"QUOTA  billing regime: {q['regime']}" + ("" if q["windows"] else "  (no rate-limit headers seen yet)")]
    if not q["windows"] and not q["sessions"]:
        out.append("  the proxy records these from the API's answers: start the agent with `capsule up` (the proxy "
                   "is on by default), or point it at `capsule proxy serve`; Codex sessions are read from "
                   "their rollouts")
    for w in q["windows"]:
        burn = "-" if w.get("burn_per_hour") is None else f"{100 * w['burn_per_hour']:.1f}%/h"
        out.append(f"  {w['account']:<20} {w['name']:<10} {100 * w['utilization']:5.1f}%  {w.get('status') or '-':<15} "
                   f"resets {_t(w.get('resets_at'))}  burn {burn}  exhausted {_t(w.get('projected_exhausted_at'))}")
    if q["sessions"]:
        out.append("  sessions (share of each window's rise):")
        for s in q["sessions"]:
            out.append(f"    {s['session'][:36]:<37} {100 * s['share']:5.1f}%")
    return "\n".join(out)


def cmd_quota(args) -> int:
    from capsule.route.quota import picture  # noqa: PLC0415 - bench_startup "capsule --help"

    q = picture(args.role)
    if args.json:
        from capsule.ground.numbers import finite_json  # noqa: PLC0415 - bench_startup "capsule --help"

        json.dump(finite_json(q), sys.stdout, indent=2, sort_keys=True, allow_nan=False)
        print()
    else:
        print(visible(render(q)))
    return 0
