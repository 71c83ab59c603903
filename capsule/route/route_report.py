"""ROUTE REPORT: boundaries, decisions, in-conversation model/effort changes and utilization over time.

The audit counts model changes inside a conversation twice over: from the proxy's route events
(who changed it: capsule or the client) and from the usage rows (transcripts and proxy), where a
conversation is (agent, session, thread); a change found in the rows but not among capsule's own
is the user's, shown with the cache write the call after it paid; a switch the client reported
through its own hook carries the cache write the client estimated. Not responsible for rendering.
Invariant: same rows, same report; INV-9's figure (`capsule_changes`) counts only capsule's own.
"""

from __future__ import annotations

from capsule.measure import cost
from capsule.store import route_rows


def analyse(calls: list[dict], events: list[dict], samples: list) -> dict:
    decisions = [e for e in events if e["kind"] == "decision"]
    boundaries: dict[str, int] = {}
    for e in events:
        if e["kind"] == "boundary":
            boundaries[e["reason"]] = boundaries.get(e["reason"], 0) + 1
    proxy_changes = [e for e in events if e["kind"] == "change" and e.get("source") != route_rows.CLIENT_HOOK]
    # a switch the client reported itself (Claude Code's PostModelSwitch hook), with its own estimate
    switches = [{"ts": e["ts"], "session": e["session"], **{k: e["detail"].get(k) for k in (
        "from_model", "to_model", "source", "prompt_cache_warm", "context_tokens", "estimated_cache_write_usd")}}
        for e in events if e["kind"] == "change" and e.get("source") == route_rows.CLIENT_HOOK]
    capsule_changes = sum(e.get("source") == "capsule" for e in proxy_changes)
    rows: dict[tuple, list[dict]] = {}
    for c in calls:
        rows.setdefault((c["agent"], c["session_id"], c.get("thread_id") or ""), []).append(c)
    in_conv = []
    for (agent, sid, thread), cs in sorted(rows.items()):
        cs = sorted(cs, key=lambda c: (c.get("ts") or 0, c["call_id"]))
        for prev, cur in zip(cs, cs[1:]):
            if prev.get("model") and cur.get("model") and prev["model"] != cur["model"]:
                write = cur.get("cache_creation_5m", 0) + cur.get("cache_creation_1h", 0)
                per = cost.bucket_costs(cur)
                usd = None if per is None else per["cache_creation_5m"] + per["cache_creation_1h"]
                in_conv.append({"agent": agent, "session_id": sid, "thread_id": thread, "call_id": cur["call_id"],
                                "from": prev["model"], "to": cur["model"], "cache_write_tokens": write,
                                "cache_write_usd": usd, "by": "user" if not capsule_changes else "unknown"})
    timeline: dict[str, list] = {}
    for s in samples:
        timeline.setdefault(f"{s.account}/{s.window}", []).append([s.ts, s.utilization])
    return {
        "boundaries": boundaries,
        "decisions": [{"ts": d["ts"], "session": d["session"], "task_class": d["task_class"],
                       "degraded": bool(d["detail"].get("degraded")), "utilization": d["detail"].get("utilization"),
                       "requested": d["detail"].get("requested"), "sent": d["detail"].get("sent"),
                       "reason": d["reason"]} for d in decisions],
        "audit": {"capsule_changes": capsule_changes,
                  "user_changes": sum(e.get("source") == "user" for e in proxy_changes),
                  "proxy_changes": [{"ts": e["ts"], "session": e["session"], "source": e["source"], **e["detail"]}
                                    for e in proxy_changes],
                  "in_conversation": in_conv,
                  "client_switches": switches},
        "notices": [{"ts": e["ts"], "line": e["reason"]} for e in events if e["kind"] == "notice"],
        "utilization": timeline,
    }


def render_text(r: dict) -> list[str]:
    a = r["audit"]
    out = [f"ROUTE  boundaries {sum(r['boundaries'].values())} ("
           + (", ".join(f"{k} {v}" for k, v in sorted(r["boundaries"].items())) or "none") + f"); "
           f"decisions {len(r['decisions'])} ({sum(d['degraded'] for d in r['decisions'])} degraded)"]
    out.append(f"  model/effort changes inside a conversation (each rewrites the prompt cache): {a['capsule_changes']} by capsule; "
               f"{a['user_changes']} by the client (proxy); {len(a['in_conversation'])} model changes in usage rows")
    for c in a["in_conversation"][:5]:
        usd = "unpriced" if c["cache_write_usd"] is None else f"${c['cache_write_usd']:.4f}"
        out.append(f"    {c['session_id'][:12]} {c['from']} -> {c['to']} at {c['call_id']}: cache write "
                   f"{c['cache_write_tokens']:,} tok ({usd}), by {c['by']}")
    for c in a.get("client_switches", [])[:5]:
        usd = c["estimated_cache_write_usd"]
        out.append(f"    {(c['session'] or '?')[:12]} {c['from_model']} -> {c['to_model']} ({c['source'] or '?'}), "
                   f"by the user: cache {'warm' if c['prompt_cache_warm'] else 'cold'}, client's estimated cache "
                   f"write {'unknown' if usd is None else f'${usd:.4f}'}")
    for d in r["decisions"][-8:]:
        out.append(f"  {d['session'] or '?':.12} {d['task_class']:<10} {'DEGRADED' if d['degraded'] else 'lane':<8} "
                   f"{(d['sent'] or {}).get('model') or '-'}  {d['reason']}")
    for n in r["notices"][-3:]:
        out.append(f"  ! {n['line']}")
    return out
