"""`capsule ctx gain [--by day|week|month|project|session] [--json|--csv] [--since WHEN]`: what the
ledger says was saved, by family or over time (measure/history.py).

Not responsible for measuring (measure/ledger.py). Invariant: numbers come from ledger
rows only; approximate token counts are labelled as such.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime

from capsule.ground.terminal import colour_on, paint, visible
from capsule.ground.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("gain", help="tokens saved, by command family",
                       description="Summarise the ledger: raw tokens, emitted tokens and saving per command family.")
    p.add_argument("--by", choices=("day", "week", "month", "project", "session"),
                   help="a history: one row per day, ISO week, month, project (repository) or session")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable output")
    fmt.add_argument("--csv", action="store_true", help="the table as CSV (for a spreadsheet)")
    p.add_argument("--since", metavar="WHEN", help="only emissions since WHEN: 30m, 2h, 7d, or an ISO date/time")
    p.add_argument("--emissions", metavar="N", type=positive_int,
                   help="also list the last N emissions (id, command, transform, tokens, handle) for audit/expand")
    p.set_defaults(func=cmd_gain)


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (`--emissions -5` would list all but the first five)."""

    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of at least 1")
    return n


def parse_since(spec: str) -> float:
    m = re.fullmatch(r"(\d+)\s*([smhd])", spec.strip())
    if m:
        return time.time() - int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    try:
        return datetime.fromisoformat(spec).timestamp()
    except ValueError:
        raise UserError(f"--since {spec!r}: expected a duration like 30m, 2h, 7d or an ISO date like 2026-11-29")


def cmd_gain(args) -> int:
    from capsule.measure.ledger import Ledger, summarise  # noqa: PLC0415 - bench_startup "capsule --help"

    since = parse_since(args.since) if args.since else None
    rows = Ledger(readonly=True).rows(since)
    if args.by:
        return _history(rows, args)
    summary = summarise(rows)
    recent = rows[-args.emissions:] if args.emissions else []
    if args.json:
        json.dump({**summary, "emissions": recent} if args.emissions else summary, sys.stdout, indent=2)
        print()
        return 0
    if args.csv:
        _csv(["family", *COLUMNS], [[f["family"], *(f[c] for c in COLUMNS)] for f in [*summary["families"], summary["total"]]])
        return 0
    print(visible(render(summary)))
    if recent:
        print()
        print(visible(render_emissions(recent)))
    return 0


COLUMNS = ("emissions", "raw_tokens", "emitted_tokens", "saved_tokens", "saved_pct", "would_save_tokens")


def _csv(head: list[str], rows: list[list]) -> None:
    import csv  # noqa: PLC0415 - bench_startup "capsule --help"

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(head)
    out.writerows(rows)


def _history(rows: list[dict], args) -> int:
    from capsule.measure.history import history  # noqa: PLC0415 - bench_startup "capsule --help"

    h = history(rows, args.by)
    if args.json:
        json.dump(h, sys.stdout, indent=2)
        print()
    elif args.csv:
        _csv([args.by, *COLUMNS], [[g["key"], *(g[c] for c in COLUMNS)] for g in [*h["rows"], h["total"]]])
    else:
        print(render_history(h, colour_on(sys.stdout)))
    return 0


def render_history(h: dict, colour: bool = False) -> str:
    """Absolute and relative savings per period; every label from stored data made visible."""
    width = max([len(h["by"]), 5, *(len(visible(g["key"])) for g in h["rows"])])
    head = f"{h['by']:<{width}}  {'emissions':>9}  {'raw tok':>11}  {'emitted tok':>11}  {'saved tok':>11}  {'saved':>6}"
    lines = [paint(head, "bold", colour), "-" * len(head)]
    for g in [*h["rows"], h["total"]]:
        if g is h["total"]:
            lines.append("-" * len(head))
        pct = paint(f"{g['saved_pct']:>5.1f}%", "green" if g["saved_pct"] >= 20 else "dim", colour)
        line = (f"{visible(g['key']):<{width}}  {g['emissions']:>9,}  {g['raw_tokens']:>11,}  {g['emitted_tokens']:>11,}  "
                f"{g['saved_tokens']:>11,}  {pct}")
        lines.append(paint(line, "bold", colour) if g is h["total"] else line)
    if not h["rows"]:
        lines.insert(2, "(no emissions in the ledger yet: run a command through `capsule ctx run -- CMD`)")
    if h["total"]["would_save_tokens"]:
        lines.append(f"measure-only: {h['total']['measured_only']} emissions left untouched; applying the transforms "
                     f"would have saved {h['total']['would_save_tokens']:,} more tokens")
    return "\n".join(lines)


def render_emissions(rows: list[dict]) -> str:
    lines = [f"{'id':>6}  {'when':<19}  {'tokens':>13}  {'transform':<16} {'handle':<24}  command"]
    for r in rows:
        when = datetime.fromtimestamp(r["ts"]).strftime("%Y-%m-%d %H:%M:%S")
        tok = f"{r['raw_tokens']}>{r['emitted_tokens']}"
        lines.append(f"{r['id']:>6}  {when:<19}  {tok:>13}  {r['transform'] or '':<16} {r['handle'] or '-':<24}  "
                     f"{(r['command'] or '(piped)')[:60]}")
    return "\n".join(lines)


def render(summary: dict) -> str:
    head = f"{'family':<18}{'emissions':>10}{'raw tok':>12}{'emitted tok':>13}{'saved tok':>12}{'saved':>8}"
    lines = [head, "-" * len(head)]
    for f in [*summary["families"], summary["total"]]:
        if f["family"] == "TOTAL":
            lines.append("-" * len(head))
        note = "  (measured only)" if f["measured_only"] and f["measured_only"] == f["emissions"] else ""
        lines.append(f"{f['family']:<18}{f['emissions']:>10}{f['raw_tokens']:>12}{f['emitted_tokens']:>13}"
                     f"{f['saved_tokens']:>12}{f['saved_pct']:>7.1f}%{note}")
    if summary["approximate"]:
        lines.append("(approx) some token counts are estimates: the tokenizer was unavailable or the payload was huge")
    if summary["total"]["measured_only"]:
        lines.append(f"measure-only: {summary['total']['measured_only']} emissions left untouched; applying the "
                     f"transforms would have saved {summary['total']['would_save_tokens']} more tokens")
    return "\n".join(lines)
