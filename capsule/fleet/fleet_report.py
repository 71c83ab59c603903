"""FLEET REPORT: cost, net savings, cache health and quota share by role, container, host, account.

Each capsule's rows are read back from the fleet database and handed to the same functions the
local reports use (capsule.measure.ledger.summarise for `ctx gain`, capsule.measure.report.build
for `ctx report`), so a capsule's figures here are the figures its own reports give; groups and the
fleet are sums of capsules. Not responsible for copying rows (sync) or drawing HTML (report_html).
Invariant: every group figure is the sum of its capsules' figures (ratios recomputed from the sums).
"""

from __future__ import annotations

import sqlalchemy as sa

from capsule.fleet import schema
from capsule.measure import figures, ledger, report as local_report
from capsule.measure.summary import read_share
from capsule.measure.usage import BUCKETS

GROUPS = ("role", "container", "host", "account")
SAVING_KEYS = ("received_tokens", "removed_tokens", "would_remove_tokens", "footer_tokens", "added_tokens",
               "bounce_tokens", "net_tokens")
TOTAL_KEYS = ("emissions", "raw_tokens", "emitted_tokens", "measured_only", "would_save_tokens")
USAGE_KEYS = ("sessions", "calls", *BUCKETS, "cost_usd", "unpriced_calls")


def _window(col, since: float | None, until: float | None):
    conds = []
    if since is not None:
        conds.append(sa.func.coalesce(col, 0) >= since)
    if until is not None:
        conds.append(sa.func.coalesce(col, 0) < until)
    return sa.and_(sa.true(), *conds)


def _rows(conn, table: sa.Table, capsule: str, cols, where, order) -> list[dict]:
    q = sa.select(*(table.c[c] for c in cols)).where(table.c.capsule == capsule, where).order_by(*order)
    return [dict(r._mapping) for r in conn.execute(q)]


def capsule_figures(conn, tags: dict, since, until, standing: dict) -> dict:
    """One capsule, as its own `ctx gain --json` and `ctx report --json` would say it."""
    e, c, t = schema.emissions, schema.calls, schema.tools
    cid = tags["capsule"]
    rows = _rows(conn, e, cid, ledger.SUMMARY_COLUMNS, _window(e.c.ts, since, until), [e.c.id])
    call_cols = ("agent", "call_id", "session_id", "thread_id", "model", "ts", *BUCKETS, "cost_usd", "source",
                 "origin", "complete")
    calls = _rows(conn, c, cid, call_cols, _window(c.c.ts, since, until), [c.c.ts, c.c.call_id])
    tool_cols = ("agent", "tool_id", "session_id", "thread_id", "ts", "name", "kind", "target", "result_tokens",
                 "result_bytes", "result_hash", "is_error", "handle")
    events = _rows(conn, t, cid, tool_cols, _window(t.c.ts, since, until), [t.c.ts, t.c.tool_id])
    meta = {(s["agent"], s["session_id"]): s for s in _rows(
        conn, schema.sessions, cid, ("agent", "session_id", "cwd", "parent", "first_ts", "last_ts", "origin"),
        sa.true(), [schema.sessions.c.session_id])}
    gain = ledger.summarise(rows)
    rep = local_report.build(calls, events, meta, rows, standing)
    verdicts = rep["cache"]
    cache = {"sessions": len(verdicts), "alerts": sum(1 for v in verdicts if v["alert"]),
             "busts": sum(len(v["busts"]) for v in verdicts),
             "cache_read_share": rep["totals"]["cache_read_share"]}
    return {**{k: tags[k] for k in ("capsule", "container", "role", "host", "account", "source")},
            "last_sync": tags["last_sync"], "total": gain["total"], "families": gain["families"],
            "approximate": gain["approximate"], "usage": rep["totals"], "savings": rep["savings"]["totals"],
            "cache": cache, "ledger": {"emissions": rep["ledger"]["emissions"]}, "figures": rep["figures"]}


def _blank() -> dict:
    return {"capsules": 0, "total": {"family": "TOTAL", **{k: 0 for k in TOTAL_KEYS}},
            "usage": {k: 0 for k in USAGE_KEYS}, "savings": {k: 0 for k in SAVING_KEYS},
            "by_family": {}, "by_door": {}, "cache": {"sessions": 0, "alerts": 0, "busts": 0},
            "approximate": False}


def _add(acc: dict, cap: dict) -> None:
    acc["capsules"] += 1
    for k in TOTAL_KEYS:
        acc["total"][k] += cap["total"][k]
    for k in USAGE_KEYS:
        acc["usage"][k] += cap["usage"][k] or 0
    for k in SAVING_KEYS:
        acc["savings"][k] += cap["savings"][k]
    for part in ("by_family", "by_door"):
        for name, v in cap["savings"][part].items():
            acc[part][name] = acc[part].get(name, 0) + v
    for k in ("sessions", "alerts", "busts"):
        acc["cache"][k] += cap["cache"][k]
    acc["approximate"] = acc["approximate"] or cap["approximate"]


def _finish(acc: dict) -> dict:
    t = acc["total"]
    t["saved_tokens"] = t["raw_tokens"] - t["emitted_tokens"]
    t["saved_pct"] = round(100.0 * t["saved_tokens"] / t["raw_tokens"], 1) if t["raw_tokens"] else 0.0
    acc["usage"]["cost_usd"] = round(acc["usage"]["cost_usd"], 6)
    acc["usage"]["cache_read_share"] = read_share(acc["usage"])
    acc["cache"]["cache_read_share"] = acc["usage"]["cache_read_share"]
    acc["savings"]["by_family"], acc["savings"]["by_door"] = acc.pop("by_family"), acc.pop("by_door")
    acc["figures"] = figures.figures(acc["total"], acc["savings"], acc["usage"])   # as `ctx report` names them
    return acc


def _weight(cap: dict) -> int:
    """What a capsule takes of an account's window: every token the model processed for it."""
    u = cap["usage"]
    return sum(u[b] for b in BUCKETS)


def quota_share(caps: list[dict]) -> list[dict]:
    """Per account: each role's and container's share of the account's tokens and cost in the window
    (measured from the usage rows; the rate-limit utilisation itself is the route layer's)."""
    out = []
    for account in sorted({c["account"] for c in caps}):
        mine = [c for c in caps if c["account"] == account]
        tokens = sum(_weight(c) for c in mine)
        usd = sum(c["usage"]["cost_usd"] or 0.0 for c in mine)
        entry = {"account": account, "tokens": tokens, "cost_usd": round(usd, 6)}
        for key in ("role", "container"):
            shares: dict[str, dict] = {}
            for c in mine:
                s = shares.setdefault(c[key], {key: c[key], "tokens": 0, "cost_usd": 0.0})
                s["tokens"] += _weight(c)
                s["cost_usd"] += c["usage"]["cost_usd"] or 0.0
            for s in shares.values():
                s["token_share"] = round(s["tokens"] / tokens, 4) if tokens else 0.0
                s["cost_share"] = round(s["cost_usd"] / usd, 4) if usd else 0.0
                s["cost_usd"] = round(s["cost_usd"], 6)
            entry[f"by_{key}"] = sorted(shares.values(), key=lambda s: -s["tokens"])
        out.append(entry)
    return out


def quota_windows(conn, since, until) -> list[dict]:
    """Per rate-limit account and window (quota_samples, from the headers each capsule's proxy saw):
    the latest utilization, and each role's and container's share of the window's rises (a sample's
    rise over the fleet's previous sample of that window, credited to the capsule that saw it;
    a new reset time starts the window again)."""
    q, c = schema.quota_samples, schema.capsules
    rows = conn.execute(sa.select(q.c.account, q.c.window, q.c.ts, q.c.utilization, q.c.status, q.c.resets_at,
                                  c.c.role, c.c.container)
                        .join(c, c.c.capsule == q.c.capsule).where(_window(q.c.ts, since, until))
                        .order_by(q.c.account, q.c.window, q.c.ts, q.c.capsule, q.c.id)).all()
    out: dict[tuple[str, str], dict] = {}
    prev: dict[tuple[str, str], tuple] = {}
    for r in rows:
        key = (r.account, r.window)
        w = out.setdefault(key, {"account": r.account, "window": r.window, "samples": 0, "rise": 0.0,
                                 "by_role": {}, "by_container": {}})
        last = prev.get(key)
        base = last[0] if last and last[1] == r.resets_at else 0.0
        rise = max(0.0, r.utilization - base)
        prev[key] = (r.utilization, r.resets_at)
        w["samples"] += 1
        w["rise"] += rise
        w.update(utilization=r.utilization, status=r.status, resets_at=r.resets_at, ts=r.ts)
        for part, name in (("by_role", r.role), ("by_container", r.container)):
            w[part][name] = w[part].get(name, 0.0) + rise
    for w in out.values():
        for part in ("by_role", "by_container"):
            w[part] = {k: round(v / w["rise"], 4) if w["rise"] else 0.0 for k, v in sorted(w[part].items())}
        w["rise"] = round(w["rise"], 6)
    return list(out.values())


def build(eng: sa.Engine, standing: dict, since: float | None = None, until: float | None = None) -> dict:
    """`standing`: the standing-context figure the local reports net out (prompt.budget.everything_on()),
    handed in by the CLI as `ctx report` does."""
    with eng.connect() as conn:
        tags = [dict(r._mapping) for r in conn.execute(sa.select(schema.capsules).order_by(schema.capsules.c.capsule))]
        caps = [capsule_figures(conn, t, since, until, standing) for t in tags]
        windows = quota_windows(conn, since, until)
    fleet = _blank()
    groups: dict[str, dict[str, dict]] = {g: {} for g in GROUPS}
    for cap in caps:
        _add(fleet, cap)
        for g in GROUPS:
            acc = groups[g].setdefault(cap[g], {g: cap[g], **_blank()})
            _add(acc, cap)
    return {"window": {"since": since, "until": until}, "fleet": _finish(fleet),
            **{f"by_{g}": [_finish(a) for _, a in sorted(groups[g].items())] for g in GROUPS},
            "quota_share": quota_share(caps), "quota_windows": windows, "capsules": caps}


def render_text(data: dict) -> str:
    head = (f"{'':<24}{'capsules':>9}{'calls':>8}{'cost $':>12}{'read%':>7}{'emissions':>10}{'raw tok':>11}"
            f"{'gross saved':>13}{'net saved':>11}{'busts':>6}")
    lines = []

    def row(name: str, g: dict) -> str:
        u, t, f = g["usage"], g["total"], g["figures"]
        share = "-" if u["cache_read_share"] is None else f"{100 * u['cache_read_share']:.1f}"
        cost = "n/a" if f["session_cost_usd"] is None else f"{f['session_cost_usd']:.4f}"
        net = "n/a" if f["net_saved_tokens"] is None else f"{f['net_saved_tokens']:,}"
        return (f"{name[:23]:<24}{g.get('capsules', 1):>9}{u['calls']:>8}{cost:>12}{share:>7}"
                f"{t['emissions']:>10}{t['raw_tokens']:>11,}{f['gross_saved_tokens']:>13,}{net:>11}"
                f"{g['cache']['busts']:>6}")

    for g in GROUPS:
        lines += [f"by {g}", head, "-" * len(head)]
        lines += [row(a[g], a) for a in data[f"by_{g}"]]
        lines.append("")
    lines += [row("FLEET", data["fleet"]), ""]
    lines += ["FLEET " + figures.lines(data["fleet"]["figures"])[0].strip(), *figures.lines(data["fleet"]["figures"])[1:], ""]
    for q in data["quota_share"]:
        parts = ", ".join(f"{r['role']} {100 * r['token_share']:.1f}%" for r in q["by_role"])
        lines.append(f"account {q['account']}: {q['tokens']:,} tokens, ${q['cost_usd']:.4f}; by role: {parts}")
    for w in data["quota_windows"]:
        parts = ", ".join(f"{k} {100 * v:.1f}%" for k, v in w["by_role"].items())
        lines.append(f"rate limit {w['account']} {w['window']}: {100 * w['utilization']:.1f}% used; rises by role: {parts}")
    if not data["capsules"]:
        lines.append("no capsules synced yet: run `capsule fleet sync --dsn … --docker` (or --state DIR)")
    return "\n".join(lines)
