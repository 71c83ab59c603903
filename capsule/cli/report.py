"""`capsule ctx report [--html FILE] [--json] [--since WHEN] [--claude-dir DIR] [--codex-dir DIR]`.

Cost by bucket over time, cache health (INV-1/INV-2 busts joined with the ledger), net savings by
family and door (bounces subtracted), discovery (re-reads, repeated commands, largest results).
Not responsible for computing (capsule.measure.report). Invariant: terminal, JSON and HTML show the
same dict; --html writes one self-contained file (no network).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from capsule.ground.terminal import visible
from capsule.cli.gain import parse_since
from capsule.ground.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("report", help="cost, cache health, net savings and wasted effort, per session",
                       description="Ingest the agents' transcripts, join them with the ledger and report cost by "
                       "bucket over time, cache-read share and busts, net savings (removed minus added minus "
                       "bounces) by family and door, and discovery lists. --html writes a self-contained page.")
    p.add_argument("--html", metavar="FILE", help="write the report as one self-contained HTML page")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--since", metavar="WHEN", help="only calls and emissions since WHEN: 30m, 2h, 7d, or ISO date")
    p.add_argument("--claude-dir", metavar="DIR", action="append", help="a Claude Code config or projects dir")
    p.add_argument("--codex-dir", metavar="DIR", action="append", help="a Codex home or sessions dir")
    p.add_argument("--dsn", metavar="DSN", help="report the fleet database instead (as `capsule fleet report`)")
    p.set_defaults(func=cmd_report)


def build(args) -> dict:
    from capsule.cli.usage import load
    from capsule.measure import report
    from capsule.measure.ledger import Ledger
    from capsule.prompt import budget

    since = parse_since(args.since) if args.since else None
    data = load(args.claude_dir, args.codex_dir, since)
    ledger = Ledger()
    try:
        rows = ledger.rows(since)
    finally:
        ledger.close()
    out = report.build(data["calls"], data["events"], data["meta"], rows, budget.everything_on())
    out["ingest"] = data["ingest"]
    out["route"] = _route(data["calls"], since)
    from capsule.prompt import record

    out["by_register"] = record.by_register(out["sessions"], record.runs())
    return out


def _route(calls: list[dict], since) -> dict:
    """Boundaries, decisions, the INV-9 audit and utilization over time (capsule.measure.route_report)."""
    from capsule.ground import paths
    from capsule.measure import quota, route_log, route_report

    state = paths.state_dir()
    samples = []
    if (state / quota.QUOTA_DB).exists():
        store = quota.QuotaStore(state / quota.QUOTA_DB)
        try:
            samples = store.samples(since)
        finally:
            store.close()
    return route_report.analyse(calls, route_log.read(state / paths.LEDGER_DB, since), samples)


def cmd_report(args) -> int:
    if getattr(args, "dsn", None):
        from capsule.cli.fleet import cmd_report as fleet_report

        args.until = None
        return fleet_report(args)
    if args.html:
        target = Path(args.html)
        if target.is_dir() or not target.parent.is_dir():
            raise UserError(f"--html {args.html}: not a writable file path (a directory, or its folder is missing)")
    data = build(args)
    if args.html:
        from capsule.measure import report_html

        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(report_html.render(data), encoding="utf-8")
        tmp.replace(target)
        print(f"wrote {target} ({target.stat().st_size:,} bytes)")
        return 0
    if args.json:
        json.dump(data, sys.stdout, indent=2, default=str)
        print()
        return 0
    from capsule.measure import report_text

    print(visible(report_text.render(data)))
    if data.get("route"):
        from capsule.measure import route_report

        print()
        print(visible("\n".join(route_report.render_text(data["route"]))))
    return 0
