"""The terminal rendering of a report dict (capsule.measure.report.build).

Not responsible for computing anything. Invariant: every number printed is a field of the dict.
"""

from __future__ import annotations

from datetime import datetime

from capsule.measure import figures


def _share(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _usd(v) -> str:
    return "unpriced" if v is None else f"${v:.4f}"


def render(r: dict) -> str:
    t = r["totals"]
    out = [f"USAGE  {t['sessions']} sessions, {t['calls']} calls, session cost {_usd(t['cost_usd'])}"
           + (f" (+{t['unpriced_calls']} unpriced calls)" if t["unpriced_calls"] else "")
           + f", cache-read share {_share(t['cache_read_share'])}"]
    if not t["calls"]:
        out = ["USAGE  no agent sessions read: " + figures.NO_TRANSCRIPTS.split(": ", 1)[1]]
    out.append(f"  fresh in {t['input_tokens']:,}  cache read {t['cache_read_input_tokens']:,}  "
               f"write 5m {t['cache_creation_5m']:,}  write 1h {t['cache_creation_1h']:,}  out {t['output_tokens']:,}")
    for s in r["sessions"][-20:]:
        when = datetime.fromtimestamp(s["first_ts"]).strftime("%m-%d %H:%M") if s["first_ts"] else "?"
        out.append(f"  {when}  {s['agent']:<6} {s['session_id'][:12]:<13} {s['model'][:20]:<21} "
                   f"{s['calls']:>5} calls  {_usd(s['cost_usd']):>10}  read {_share(s['cache_read_share']):>6}")
    regs = r.get("by_register") or {}
    if regs and set(regs) != {"unrecorded"}:
        out.append("  output by register (thinking included): " + "; ".join(
            f"{reg} {x['output_tokens']:,} in {x['calls']} calls"
            + (f" ({x['output_per_call']:,.1f}/call)" if x["output_per_call"] is not None else "")
            for reg, x in regs.items()))
    out.append("")
    out.append("CACHE HEALTH (every call from the 2nd on should read the prompt cache, and >= 85% of input should come from it)")
    bad = [c for c in r["cache"] if c["alert"] or c["busts"] or c["inv1_misses"]]
    if not r["cache"]:
        out.append("  no sessions")
    elif not bad:
        out.append(f"  all {len(r['cache'])} sessions healthy")
    for c in bad:
        flag = "ALERT" if c["alert"] else ("ok" if c["share_ok"] else "low (" + "; ".join(c["explained_by"]) + ")")
        out.append(f"  {c['agent']} {c['session_id'][:12]}  share {_share(c['cache_read_share'])} {flag}"
                   f"  busts {len(c['busts'])}  no-read calls {len(c['inv1_misses'])}")
        for b in c["busts"][:5]:
            out.append(f"    bust at call {b['call']} ({b['call_id']}): read {b['read_tokens']:,} of "
                       f"{b['previous_prompt_tokens']:,}; {b['explained'] or 'UNEXPLAINED'}; capsule changed "
                       f"{'something (ledger ' + ','.join(map(str, b['ledger_ids'][:5])) + ')' if b['capsule_changed_before'] else 'nothing'} before it")
    out.append("")
    s = r["savings"]["totals"]
    out.append("NET SAVINGS (tokens, once per emission)")
    out += figures.lines(r["figures"])
    if r["figures"]["transcripts"]:
        out.append(f"  in the agent sessions read: tool results received {s['received_tokens']:,}, of which capsule "
                   f"removed {s['removed_tokens']:,} (footers {s['footer_tokens']:,} included)")
    led = r["ledger"]
    for title, rows in (("by family", led["by_family"]), ("by door", led["by_door"])):
        if rows:
            out.append(f"  {title}: " + ", ".join(f"{x['name']} {x['saved_tokens']:,}"
                                                  + (f" (+{x['would_save_tokens']:,} would)" if x["would_save_tokens"] else "")
                                                  for x in rows[:8]))
    out.append("")
    d = r["discovery"]
    out.append(f"DISCOVERY  unchanged re-reads {d['totals']['unchanged_reread_tokens']:,} tok, changed re-reads "
               f"{d['totals']['changed_reread_tokens']:,} tok, repeated commands {d['totals']['repeated_command_tokens']:,} tok")
    for x in d["across_sessions"]["rereads_by_path"][:5]:
        out.append(f"  re-read  {x['times']}x {x['tokens']:>8,} tok  {x['path']}")
    for x in d["across_sessions"]["repeats_by_command"][:5]:
        out.append(f"  repeated {x['times']}x {x['tokens']:>8,} tok  {x['command'][:70]}")
    for x in d["largest_results"][:5]:
        out.append(f"  largest  {x['tokens']:>8,} tok  {x['name']}: {(x['target'] or '')[:60]}")
    return "\n".join(out)
