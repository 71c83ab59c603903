"""GOVERNOR: degrade, don't die — which lane choice a task class gets at its boundary, given the quota.

Not responsible for reading headers (route/quota.py), for applying a choice (launch flags in
route/policy.py, the proxy's first request of a conversation) or for logging it (the caller writes
the decision to the route log). Invariant: a choice is made only when asked at a boundary and is
a pure function of (table, class, peak utilization, recorded calls): past the role's degrade_at,
routine lanes take their degraded_* values, main and plan only when degrade_main, and a change of
model only when it pays for the cache write it causes (route/payoff.py); output is never cut.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from capsule.route import payoff
from capsule.route.lanes import Lane, Table
from capsule.measure import cost
from capsule.measure.usage import UsageStore
from capsule.policy.manifest import Role, load_role


@dataclass(frozen=True)
class Choice:
    lane: Lane
    degraded: bool
    reason: str
    payoff: dict | None = None      # route/payoff.py's figures when the change was priced


def choose(table: Table, task_class: str, utilization: float, window: str | None = None,
           calls: list[dict] | None = None) -> Choice:
    """`calls`: the usage store's recorded calls; given, a change of model is made only when it
    pays for the cache write it causes (route/payoff.py) on the lane's own history."""
    lane = table[task_class]
    where = f"{window} at {100 * utilization:.0f}%" if window else f"{100 * utilization:.0f}%"
    if utilization < table.degrade_at:
        return Choice(lane, False, f"{where} < degrade_at {100 * table.degrade_at:.0f}%: role lane")
    if not table.may_degrade(task_class):
        return Choice(lane, False, f"{where} >= degrade_at {100 * table.degrade_at:.0f}%, but the {task_class} lane "
                                   "degrades only with degrade_main = true")
    cheaper = lane.degraded()
    if cheaper == lane:
        return Choice(lane, False, f"{where} >= degrade_at: the {task_class} lane names nothing cheaper")
    reason = (f"{where} >= degrade_at {100 * table.degrade_at:.0f}%: {task_class} lane degraded to "
              f"{cheaper.model or 'client default'}/{cheaper.effort or '-'}")
    if calls is None or not (cheaper.model and lane.model) or cheaper.model == lane.model:
        return Choice(cheaper, True, reason)        # no model change: no cache to rewrite
    hist = payoff.history(calls, lane.model, subagent=task_class != "main")
    priced = payoff.price(lane.model, cheaper.model, hist) if hist else None
    if priced is None:
        return Choice(cheaper, True, reason + " (not priced: no recorded conversations of this lane yet)")
    if not priced.pays:
        return Choice(lane, False, f"{where} >= degrade_at {100 * table.degrade_at:.0f}%, but "
                                   + priced.reason(cheaper.model) + ": role lane kept", priced.as_dict())
    return Choice(cheaper, True, reason + "; " + priced.reason(cheaper.model), priced.as_dict())


def budget_windows(role_arg, now: float | None = None, regime: str = "api_key", calls: list[dict] | None = None) -> list[dict]:
    """Spend windows from the cost engine for an API key: today's (UTC) spend against budget_usd_day,
    the most spent session against budget_usd_session. None apply to a subscription login."""
    role = role_arg if isinstance(role_arg, Role) else load_role(role_arg)
    routing = role.context.routing or {}
    return spend_windows(routing.get("budget_usd_day"), routing.get("budget_usd_session"), now, regime, calls)


def spend_windows(day_budget: float | None, session_budget: float | None, now: float | None = None,
                  regime: str = "api_key", calls: list[dict] | None = None, session: str | None = None,
                  usage_db=None) -> list[dict]:
    """The spend windows themselves; `session` given: that session's spend, else the most spent one."""
    if regime == "subscription" or not (day_budget or session_budget):
        return []
    now = time.time() if now is None else now
    if calls is None:
        store = UsageStore(usage_db)
        try:
            calls = store.calls()
        finally:
            store.close()
    day0 = datetime.fromtimestamp(now, timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    reset = (day0 + timedelta(days=1)).timestamp()
    out = []
    spent_day, per_session = 0.0, {}
    for c in calls:
        usd = cost.call_cost(c).usd or 0.0
        if (c.get("ts") or 0) >= day0.timestamp():
            spent_day += usd
        per_session[c["session_id"]] = per_session.get(c["session_id"], 0.0) + usd
    if day_budget:
        out.append(_spend("spend-day", spent_day, day_budget, reset, now))
    if session_budget and (per_session or session):
        sid, usd = (session, per_session.get(session, 0.0)) if session else max(per_session.items(), key=lambda kv: kv[1])
        out.append({**_spend("spend-session", usd, session_budget, None, now), "session": sid})
    return out


def _spend(name: str, usd: float, budget: float, reset: float | None, now: float) -> dict:
    u = usd / budget
    return {"account": "budget", "regime": "api_key", "api": "cost engine", "name": name,
            "utilization": round(u, 4), "status": "rejected" if u >= 1 else "allowed", "resets_at": reset,
            "burn_per_hour": None, "projected_exhausted_at": now if u >= 1 else None,
            "spent_usd": round(usd, 6), "budget_usd": budget, "samples": 0, "updated": now}
