"""`capsule ctx report [--html FILE] [--json] [--since WHEN] [--claude-dir DIR] [--codex-dir DIR]`.

Cost by bucket over time, cache health (INV-1/INV-2 busts joined with the ledger), net savings by
family and door (bounces subtracted), discovery (re-reads, repeated commands, largest results).
Not responsible for computing (capsule.measure.report). Invariant: terminal, JSON and HTML show the
same dict; --html writes one self-contained file (no network).
"""

from __future__ import annotations

from capsule.ground.terminal import visible
from capsule.cli import report_out, whatif_cmd
from capsule.cli.fleet import cmd_report as fleet_report
from capsule.cli.gain import parse_since
from capsule.cli.usage_cmd import load
from capsule.ground import paths


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
    p.add_argument("--whatif", action="store_true", help="add what capsule would have saved on these sessions "
                   "(as `capsule ctx whatif`; every tool result is replayed through the engine)")
    p.add_argument("--role", metavar="ROLE", help="with --whatif: the policy to apply (default as `up`)")
    p.add_argument("--dsn", metavar="DSN", help="report the fleet database instead (as `capsule fleet report`)")
    p.set_defaults(func=cmd_report)


def build(args) -> dict:
    from capsule.measure import report  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.measure.ledger import Ledger  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.prompt import budget  # noqa: PLC0415 - bench_startup "capsule --help"

    since = parse_since(args.since) if args.since else None
    data = load(args.claude_dir, args.codex_dir, since)
    ledger = Ledger()
    try:
        rows = ledger.rows(since)
    finally:
        ledger.close()
    out = report.build(data["calls"], data["events"], data["meta"], rows, budget.everything_on())
    out["window"] = {"since": since, "until": None}
    out["ingest"] = data["ingest"]
    out["route"] = _route(data["calls"], since)
    from capsule.prompt import record  # noqa: PLC0415 - bench_startup "capsule --help"

    out["by_register"] = record.by_register(out["sessions"], record.runs())
    if getattr(args, "whatif", False):
        out["whatif"] = whatif_cmd.build(args)
    return out


def _route(calls: list[dict], since) -> dict:
    """Boundaries, decisions, the INV-9 audit and utilization over time (capsule.route.route_report)."""
    from capsule.route import quota, route_report  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.store import route_rows  # noqa: PLC0415 - bench_startup "capsule --help"

    state = paths.state_dir()
    samples = []
    if (state / quota.QUOTA_DB).exists():
        store = quota.QuotaStore(state / quota.QUOTA_DB)
        try:
            samples = store.samples(since)
        finally:
            store.close()
    return route_report.analyse(calls, route_rows.read(state / paths.LEDGER_DB, since), samples)


def cmd_report(args) -> int:
    if getattr(args, "dsn", None):
        args.until = None
        return fleet_report(args)
    target = report_out.html_target(args.html)
    data = build(args)
    if report_out.write(data, target, args.json, _measure_html):
        return 0
    from capsule.measure import report_text  # noqa: PLC0415 - bench_startup "capsule --help"

    print(visible(report_text.render(data)))
    if data.get("route"):
        from capsule.route import route_report  # noqa: PLC0415 - bench_startup "capsule --help"

        print()
        print(visible("\n".join(route_report.render_text(data["route"]))))
    if data.get("whatif"):
        from capsule.measure import whatif  # noqa: PLC0415 - bench_startup "capsule --help"

        print()
        print(visible(whatif.render(data["whatif"])))
    return 0


def _measure_html(data: dict) -> str:
    from capsule.measure import report_html  # noqa: PLC0415 - bench_startup "capsule --help"

    return report_html.render(data)
