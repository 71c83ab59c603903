"""`capsule ctx usage [--claude-dir DIR] [--codex-dir DIR] [--since WHEN] [--json]`: what sessions cost.

Ingests the agents' transcripts (incrementally) into the usage store, then prints per session:
agent, session, model, calls, fresh input, cache read, cache writes 5m/1h, output, cost, read share;
then output per register (prompt/record.py: which register each `capsule up` run had).
Not responsible for parsing or pricing (capsule.measure). Invariant: with --claude-dir/--codex-dir
only sessions read from those folders are shown; JSON totals are the sums of the sessions listed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from capsule.ground.terminal import visible
from capsule.cli.gain import parse_since
from capsule.ground.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("usage", help="token usage and cost per agent session, from the agents' transcripts",
                       description="Ingest Claude Code and Codex transcripts (incrementally; re-running never "
                       "double counts) and show per session: calls, fresh input, cache read, cache writes "
                       "(5-minute, 1-hour), output, cost and cache-read share.")
    p.add_argument("--claude-dir", metavar="DIR", action="append",
                   help="a Claude Code config dir or projects dir (default: $CLAUDE_CONFIG_DIR or ~/.claude)")
    p.add_argument("--codex-dir", metavar="DIR", action="append",
                   help="a Codex home or sessions dir (default: $CODEX_HOME or ~/.codex)")
    p.add_argument("--since", metavar="WHEN", help="only calls since WHEN: 30m, 2h, 7d, or an ISO date/time")
    p.add_argument("--json", action="store_true", help="machine-readable: {sessions: [...], totals: {...}}")
    p.set_defaults(func=cmd_usage)


def load(claude_dirs, codex_dirs, since: float | None) -> dict:
    """Ingest (the given folders, else the agents' defaults), then the stored rows to report on."""
    from capsule.measure import ingest  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.measure.usage import UsageStore  # noqa: PLC0415 - bench_startup "capsule --help"

    explicit = bool(claude_dirs or codex_dirs)
    for d in [*(claude_dirs or []), *(codex_dirs or [])]:
        if not Path(d).is_dir():
            raise UserError(f"{d}: not a directory")
    claude_dirs = [Path(d).resolve() for d in claude_dirs or []] or ([] if explicit else [ingest.claude_home()])
    codex_dirs = [Path(d).resolve() for d in codex_dirs or []] or ([] if explicit else [ingest.codex_home()])
    store = UsageStore()
    try:
        report = ingest.ingest(store, claude_dirs, codex_dirs)
        calls, events, meta = store.calls(since), store.tools(since), store.sessions()
        keep = store.sessions_in(tuple(str(d) + "/" for d in [*claude_dirs, *codex_dirs])) if explicit else None
    finally:
        store.close()
    if keep is not None:
        calls = [c for c in calls if (c["agent"], c["session_id"]) in keep]
        events = [e for e in events if (e["agent"], e["session_id"]) in keep]
    return {"calls": calls, "events": events, "meta": meta, "ingest": report.as_dict(),
            "dirs": (claude_dirs, codex_dirs)}


def collect(claude_dirs, codex_dirs, since: float | None) -> dict:
    from capsule.measure import summary  # noqa: PLC0415 - bench_startup "capsule --help"

    from capsule.prompt import record  # noqa: PLC0415 - bench_startup "capsule --help"

    data = load(claude_dirs, codex_dirs, since)
    rows = summary.sessions(data["calls"], data["meta"])
    runs = record.runs()
    for s in rows:
        s["register"] = record.register_of(s, runs)
    return {"sessions": rows, "totals": summary.totals(rows), "ingest": data["ingest"],
            "by_register": record.by_register(rows, runs)}


def cmd_usage(args) -> int:
    since = parse_since(args.since) if args.since else None
    data = collect(args.claude_dir, args.codex_dir, since)
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        print()
        return 0
    print(visible(render(data)))
    return 0


def _usd(row: dict) -> str:
    if row.get("cost_usd") is None:
        return "unpriced"
    text = f"${row['cost_usd']:.4f}"
    return text + (f" +{row['unpriced_calls']} unpriced" if row.get("unpriced_calls") else "")


def _share(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def render(data: dict) -> str:
    head = (f"{'agent':<7}{'session':<14}{'model':<20}{'calls':>7}{'fresh in':>13}{'cache read':>15}"
            f"{'write 5m':>12}{'write 1h':>12}{'output':>12}  {'cost':<22}{'read%':>7}")
    lines = [head, "-" * len(head)]
    for s in data["sessions"]:
        # A subagent may use another model: the session's main one, "+N" for the others.
        model = s["model"] if len(s["models"]) < 2 else f"{s['model'][:15]} +{len(s['models']) - 1}"
        lines.append(f"{s['agent']:<7}{s['session_id'][:12]:<14}{model[:19]:<20}{s['calls']:>7}"
                     f"{s['input_tokens']:>13,}{s['cache_read_input_tokens']:>15,}{s['cache_creation_5m']:>12,}"
                     f"{s['cache_creation_1h']:>12,}{s['output_tokens']:>12,}  {_usd(s):<22}"
                     f"{_share(s['cache_read_share']):>7}")
    t = data["totals"]
    lines.append("-" * len(head))
    lines.append(f"{'TOTAL':<21}{str(t['sessions']) + ' sessions':<20}{t['calls']:>7}{t['input_tokens']:>13,}"
                 f"{t['cache_read_input_tokens']:>15,}{t['cache_creation_5m']:>12,}{t['cache_creation_1h']:>12,}"
                 f"{t['output_tokens']:>12,}  {_usd(t):<22}{_share(t['cache_read_share']):>7}")
    regs = data.get("by_register") or {}
    if len(regs) > 1 or (regs and "unrecorded" not in regs):
        lines.append("output by register (thinking/reasoning included: neither transcript splits it out):")
        for reg, r in regs.items():
            per = "-" if r["output_per_call"] is None else f"{r['output_per_call']:,.1f}"
            lines.append(f"  {reg:<11}{r['sessions']:>4} sessions{r['calls']:>7} calls{r['output_tokens']:>12,} output"
                         f"{per:>10} per call")
    unpriced = sorted({m for s in data["sessions"] for m in s.get("unpriced_models", [])})
    if unpriced:
        lines.append(f"unpriced (no row in capsule/measure/data/prices.toml): {', '.join(unpriced)}")
    ing = data.get("ingest") or {}
    if ing.get("skipped_total"):
        lines.append(f"skipped {ing['skipped_total']:,} bad transcript line(s) or value(s) so far "
                     f"({ing.get('skipped', 0):,} in this pass): malformed, too deep, too long or out of range")
    if ing.get("estimated_results"):
        lines.append(f"{ing['estimated_results']:,} tool result(s) over 1 MiB: tokens counted on the first MiB, "
                     f"the rest estimated from its size")
    for err in ing.get("errors", [])[:5]:
        lines.append(f"  {err}")
    if not data["sessions"]:
        lines.append("no agent sessions found (Claude Code: $CLAUDE_CONFIG_DIR or ~/.claude; "
                     "Codex: $CODEX_HOME or ~/.codex)")
    return "\n".join(lines)
