"""CACHE HEALTH (INV-1, INV-2): does the prompt cache hold, and where did it break?

Per conversation thread (a subagent has its own cache), from stored call rows: cache reads must be
> 0 from the second call; a BUST is a call that reads back less than half of the previous call's
prompt. Each bust is explained (cache expired over an idle gap, compaction, model switch) or not,
and joined with the ledger: did capsule change anything (an applied emission in that session)
between the previous call and this one? Per session, the cache-read share must be >= 85% unless
the session is short or its busts are explained.
Not responsible for ingestion or rendering. Invariant: a verdict cites the rows it came from.
"""

from __future__ import annotations

from capsule.measure.summary import read_share

SHARE_FLOOR = 0.85          # INV-2
BUST_FRACTION = 0.5         # a call reading back less than this share of the previous prompt
MIN_PREFIX_TOKENS = 1024    # the smallest prompt either provider caches
SHORT_SESSION_CALLS = 4
TTL_5M_S, TTL_1H_S = 300, 3600


def prompt_tokens(c: dict) -> int:
    return c["input_tokens"] + c["cache_read_input_tokens"] + c["cache_creation_5m"] + c["cache_creation_1h"]


def _scopes(session: str, threads: set[str]) -> set[str]:
    return {session, *threads}


def analyse(calls: list[dict], events: list[dict], ledger_rows: list[dict]) -> list[dict]:
    """One verdict per (agent, session) with its busts and INV-1 misses."""
    by_session: dict[tuple[str, str], list[dict]] = {}
    for c in calls:
        by_session.setdefault((c["agent"], c["session_id"]), []).append(c)
    compactions: dict[tuple[str, str], list[float]] = {}
    for e in events:
        if e.get("kind") == "compact" and e.get("ts") is not None:
            compactions.setdefault((e["agent"], e["session_id"]), []).append(e["ts"])
    applied = [r for r in ledger_rows if r.get("applied")]
    out = []
    for (agent, sid), rows in by_session.items():
        threads: dict[str | None, list[dict]] = {}
        for c in sorted(rows, key=lambda c: (c.get("ts") or 0, c["call_id"])):
            threads.setdefault(c.get("thread_id"), []).append(c)
        scopes = _scopes(sid, {t for t in threads if t})
        mine = [r for r in applied if r.get("scope") in scopes]
        busts, misses = [], []
        for thread, seq in threads.items():
            long_ttl = any(c["cache_creation_1h"] for c in seq)
            for i in range(1, len(seq)):
                prev, cur = seq[i - 1], seq[i]
                if cur["cache_read_input_tokens"] == 0:
                    misses.append({"call": i + 1, "call_id": cur["call_id"], "thread": thread})
                expected = prompt_tokens(prev)
                if expected >= MIN_PREFIX_TOKENS and cur["cache_read_input_tokens"] < BUST_FRACTION * expected:
                    busts.append(_bust(agent, sid, thread, i, prev, cur, expected, long_ttl,
                                       compactions.get((agent, sid), []), mine))
        total = {k: sum(c[k] for c in rows) for k in ("input_tokens", "cache_read_input_tokens",
                                                      "cache_creation_5m", "cache_creation_1h")}
        share = read_share(total)
        reasons = []
        if len(rows) < SHORT_SESSION_CALLS:
            reasons.append(f"short session ({len(rows)} calls): the first writes dominate")
        if busts and all(b["explained"] for b in busts):
            reasons.append("every bust is explained: " + ", ".join(sorted({b["explained"] for b in busts})))
        ok = share is None or share >= SHARE_FLOOR
        out.append({"agent": agent, "session_id": sid, "calls": len(rows), "cache_read_share": share,
                    "share_ok": ok, "explained_by": reasons if not ok else [],
                    "alert": not ok and not reasons, "inv1_misses": misses, "busts": busts,
                    "capsule_emissions": len(mine)})
    out.sort(key=lambda v: v["session_id"])
    return out


def _bust(agent, sid, thread, i, prev, cur, expected, long_ttl, compact_ts, mine) -> dict:
    t0, t1 = prev.get("ts") or 0, cur.get("ts") or 0
    gap = t1 - t0
    ttl = TTL_1H_S if long_ttl else TTL_5M_S
    if any(t0 < t <= t1 for t in compact_ts):
        why = "compaction"
    elif gap > ttl:
        why = f"cache expired (idle {gap:.0f}s > {ttl}s)"
    elif prev.get("model") != cur.get("model"):
        why = f"model switch ({prev.get('model')} -> {cur.get('model')})"
    else:
        why = None
    between = [r["id"] for r in mine if t0 < (r.get("ts") or 0) <= t1]
    return {"call": i + 1, "call_id": cur["call_id"], "thread": thread, "ts": t1,
            "read_tokens": cur["cache_read_input_tokens"], "previous_prompt_tokens": expected,
            "explained": why, "capsule_changed_before": bool(between), "ledger_ids": between}
