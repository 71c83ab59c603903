"""WHATIF: what recorded sessions would have cost under capsule's policy, lever by lever.

Every recorded call is re-priced with the prompt it would have had: the tool results (text, images, PDFs) before it as
the engine would have shaped them (tokens cached before the call come out of its cache read, new
ones out of its writes and fresh input), capsule's standing context added to every call, the
recovery of each line the agent used later but capsule would have cut (a bounce) added back, and the
role's lane model for its thread. Not responsible for replaying results through the engine or for
reading transcripts (cli/whatif_cmd.py) — pure: the same calls and figures in, the same report out.
Invariant: `actual` is the cost engine's figure for exactly these calls (what `ctx report` shows).
"""

from __future__ import annotations

from collections import namedtuple

from capsule.measure import cost
from capsule.measure.usage import BUCKETS

ASSUMPTION = ("The model's behaviour is taken as unchanged: every call happens as recorded, with a smaller "
              "prompt (tool results as capsule would have shaped them, its standing context added) on the "
              "role's lane model. Lines the agent used later that capsule would have cut are counted as "
              "bounces: their recovery (a ctx_expand call and its result, kept in the prompt after) is added.")
LEVERS = ("tool_results", "standing_context", "bounces", "lanes", "media")   # in the order they apply
RECOVERY_CALL = {"input_tokens": 60, "output_tokens": 40}    # one ctx_expand request and its short answer

# tokens leave (or, negative, join) the prompt of every later call in the thread from `ts` on
Change = namedtuple("Change", ("agent", "session", "thread", "ts", "tokens"))
Bounce = namedtuple("Bounce", ("agent", "session", "thread", "ts", "tool_id", "line", "used", "tokens"))

_OLD_FIRST = ("cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h", "input_tokens")
_NEW_FIRST = ("cache_creation_5m", "cache_creation_1h", "input_tokens", "cache_read_input_tokens")


def _take(b: dict, tokens: int, order: tuple[str, ...]) -> None:
    for k in order:
        if tokens <= 0:
            return
        cut = min(b[k], tokens)
        b[k] -= cut
        tokens -= cut


def _threads(calls: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for c in sorted(calls, key=lambda c: (c.get("ts") or 0.0, c["call_id"])):
        out.setdefault((c["agent"], c["session_id"], c.get("thread_id")), []).append(c)
    return out


def shaped(calls: list[dict], changes: list[Change], standing_tokens: int = 0) -> list[dict]:
    """Each call's buckets with the prompt it would have had (same order, same ids)."""
    per: dict[tuple, list[Change]] = {}
    for ch in sorted(changes, key=lambda c: (c.ts or 0.0, c.tokens)):
        per.setdefault((ch.agent, ch.session, ch.thread), []).append(ch)
    out = []
    for key, rows in _threads(calls).items():
        mine, before = per.get(key, []), 0
        for i, c in enumerate(rows):
            now = sum(ch.tokens for ch in mine if (ch.ts or 0.0) < (c.get("ts") or 0.0))
            b = {k: int(c.get(k) or 0) for k in BUCKETS}
            old, new = before, now - before
            if old >= 0:
                _take(b, old, _OLD_FIRST)
            else:
                b["cache_read_input_tokens"] += -old
            if new >= 0:
                _take(b, new, _NEW_FIRST)
            else:
                b["cache_creation_5m" if b["cache_creation_5m"] or i == 0 else "input_tokens"] += -new
            if standing_tokens:
                if i == 0:
                    b["cache_creation_5m" if c["agent"] == "claude" else "input_tokens"] += standing_tokens
                else:
                    b["cache_read_input_tokens"] += standing_tokens
            before = now
            out.append({**c, **b})
    return out


def _usd(call: dict, buckets: dict, model: str | None = None) -> float | None:
    """The call's cost with these buckets: its recorded cost scaled by the priced ratio, so an
    upstream-reported cost stays the basis; None when unpriced."""
    actual = cost.call_cost(call).usd
    if actual is None:
        return None
    old = cost.call_cost({**{k: call.get(k, 0) for k in BUCKETS}, "model": call.get("model")}).usd
    new = cost.call_cost({**buckets, "model": model or call.get("model")}).usd
    if old is None or new is None:
        return actual
    return actual * new / old if old > 0 else new


def project(calls: list[dict], saved: list[Change], bounces: list[Bounce], standing_tokens: int = 0,
            lane_model=None, media: dict | None = None, media_saved: list[Change] = ()) -> dict:
    """The report: per session and in total, actual and projected cost and the lever deltas."""
    lane_model = lane_model or (lambda call: None)
    back = [Change(b.agent, b.session, b.thread, b.ts, -b.tokens) for b in bounces]
    media_saved = list(media_saved)
    stages = [calls, shaped(calls, saved), shaped(calls, saved, standing_tokens),
              shaped(calls, saved + back, standing_tokens)]
    with_media = shaped(calls, saved + back + media_saved, standing_tokens)
    sessions: dict[tuple, dict] = {}
    unpriced = 0
    for i, c in enumerate(calls):
        s = sessions.setdefault((c["agent"], c["session_id"]), {
            "agent": c["agent"], "session": c["session_id"], "calls": 0, "unpriced_calls": 0,
            "actual_usd": 0.0, "projected_usd": 0.0, "tokens_removed": 0, "bounces": 0,
            "levers": dict.fromkeys(LEVERS, 0.0)})
        s["calls"] += 1
        figures = [_usd(c, {k: st[i][k] for k in BUCKETS}) for st in stages]
        figures.append(_usd(c, {k: stages[-1][i][k] for k in BUCKETS}, lane_model(c)))
        figures.append(_usd(c, {k: with_media[i][k] for k in BUCKETS}, lane_model(c)))
        if figures[0] is None:
            s["unpriced_calls"] += 1
            unpriced += 1
            continue
        s["actual_usd"] += figures[0]
        s["projected_usd"] += figures[-1]
        for lever, a, b in zip(LEVERS, figures, figures[1:]):
            s["levers"][lever] += b - a
    for ch in saved + media_saved:
        if (ch.agent, ch.session) in sessions:
            sessions[(ch.agent, ch.session)]["tokens_removed"] += ch.tokens
    for b in bounces:
        s = sessions.get((b.agent, b.session))
        if s is None:
            continue
        s["bounces"] += 1
        model = next((c.get("model") for c in calls if c["agent"] == b.agent and c["session_id"] == b.session), None)
        extra = cost.call_cost({**dict.fromkeys(BUCKETS, 0), **RECOVERY_CALL, "model": model}).usd or 0.0
        s["levers"]["bounces"] += extra
        s["projected_usd"] += extra
    rows = [_rounded(s) for _, s in sorted(sessions.items())]
    total = {"sessions": len(rows), "calls": sum(r["calls"] for r in rows), "unpriced_calls": unpriced,
             "actual_usd": round(sum(s["actual_usd"] for s in sessions.values()), 6),
             "projected_usd": round(sum(s["projected_usd"] for s in sessions.values()), 6),
             "tokens_removed": sum(r["tokens_removed"] for r in rows), "bounces": len(bounces),
             "levers": {k: round(sum(s["levers"][k] for s in sessions.values()), 6) for k in LEVERS}}
    return {"assumption": ASSUMPTION, "sessions": rows, "total": total, "media": media or {},
            "bounces": [b._asdict() for b in sorted(bounces, key=lambda b: (b.session, b.ts or 0.0, b.tool_id))]}


def _rounded(s: dict) -> dict:
    return {**s, "actual_usd": round(s["actual_usd"], 6), "projected_usd": round(s["projected_usd"], 6),
            "levers": {k: round(v, 6) for k, v in s["levers"].items()}}


def render(report: dict) -> str:
    """The text table: one line a session, the total, the assumption, the bounces."""
    t = report["total"]
    lines = [f"what if capsule had run these {t['sessions']} sessions ({t['calls']} calls"
             + (f", {t['unpriced_calls']} unpriced" if t["unpriced_calls"] else "") + ")", "",
             f"{'agent':<7} {'session':<14} {'calls':>5} {'actual $':>10} {'projected $':>11} {'tool results':>12} "
             f"{'standing':>9} {'bounces':>8} {'lanes':>8} {'media':>8}"]
    for s in report["sessions"] + [{**t, "agent": "total", "session": ""}]:
        lv = s["levers"]
        lines.append(f"{s['agent']:<7} {s['session'][:14]:<14} {s['calls']:>5} {s['actual_usd']:>10.4f} "
                     f"{s['projected_usd']:>11.4f} {lv['tool_results']:>12.4f} {lv['standing_context']:>9.4f} "
                     f"{lv['bounces']:>8.4f} {lv['lanes']:>8.4f} {lv['media']:>8.4f}")
    if t["actual_usd"]:
        lines.append(f"\nprojected {t['projected_usd'] / t['actual_usd']:.1%} of actual; "
                     f"{t['tokens_removed']:,} tool-result tokens removed; {t['bounces']} bounces")
    media = report.get("media") or {}
    lines.append(f"media: {media.get('note', 'no images or PDFs in these sessions')}")
    lines.append("\n" + ASSUMPTION)
    if report["bounces"]:
        lines.append("\nbounces (a line capsule would have cut, used later):")
        for b in report["bounces"][:50]:
            lines.append(f"  {b['session'][:12]} {b['tool_id'][:16]}: {b['line'][:100]!r} <- {b['used'][:60]!r}")
    return "\n".join(lines)
