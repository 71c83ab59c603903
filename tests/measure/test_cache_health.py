"""Cache health on stored rows: INV-1 misses, busts (explained or not) joined with the ledger, INV-2.

Rows go through the real stores (record_usage into usage.db, Ledger.record into ledger.db) and come
back out the way `ctx report` reads them.
"""

from __future__ import annotations

from capsule.measure import cache
from capsule.measure.ledger import Ledger, Row
from capsule.measure.usage import Batch, ToolEvent, UsageStore, record_usage


def _call(store, sid, n, ts, read, write=200, fresh=10, model="claude-sonnet-4-5", thread=None):
    record_usage(sid, "claude", model, f"msg_{sid}_{n}", input_tokens=fresh, cache_read_input_tokens=read,
                 cache_creation_5m=write, output_tokens=50, ts=ts, source="transcript", thread=thread, store=store)


def _emission(ledger, scope, ts, applied=True) -> int:
    return ledger.record(Row(scope=scope, command="ls -la", family="ls", transform="ls", stream="stdout",
                             mode="standard", applied=applied, raw_tokens=900, emitted_tokens=300, raw_bytes=3600,
                             emitted_bytes=1200, exit_code=0, handle=None, duration_ms=1.0,
                             token_label="cl100k_base", ts=ts))


def _verdicts(store, ledger):
    return {v["session_id"]: v for v in cache.analyse(store.calls(), store.tools(), ledger.rows())}


def test_busts_are_found_explained_and_joined_with_the_ledger(state_dir):
    store, ledger = UsageStore(), Ledger()
    t = 1_000_000.0
    # healthy: the prompt grows, every call reads back what the previous one wrote
    for n in range(12):
        _call(store, "healthy", n, t + n * 10, read=0 if n == 0 else 5000 + 300 * n, write=5000 if n == 0 else 300)
    # a bust at call 4 with nothing to explain it, and capsule emitted something between calls 3 and 4
    reads = [0, 6000, 6300, 500, 7000]
    for n, r in enumerate(reads):
        _call(store, "busted", n, t + n * 10, read=r, write=6000 if n in (0, 3) else 300)
    eid = _emission(ledger, "busted", t + 25)         # between call 3 (t+20) and the bust (t+30)
    _emission(ledger, "busted", t + 5)              # before call 2: not "before the bust"
    # a bust after an idle gap beyond the 5-minute TTL: explained
    for n, (ts, r) in enumerate([(t, 0), (t + 10, 6000), (t + 10 + 900, 0), (t + 920, 6300)]):
        _call(store, "idle", n, ts, read=r, write=6000 if r == 0 else 300)
    # a compaction between calls 2 and 3: explained
    for n, r in enumerate([0, 6000, 300, 6300]):
        _call(store, "compacted", n, t + n * 10, read=r, write=6000 if n in (0, 2) else 300)
    store.write(Batch(tools=[ToolEvent("claude", "uuid-compact", "compacted", ts=t + 15, name="compact",
                                       kind="compact", target="compact")]))
    # a subagent thread starts cold: its first call reading nothing is not a miss of the parent's
    for n, r in enumerate([0, 6000, 6300]):
        _call(store, "withsub", n, t + n * 10, read=r, write=6000 if n == 0 else 300)
    _call(store, "withsub", 9, t + 12, read=0, write=4000, thread="agent-1")
    _call(store, "withsub", 10, t + 13, read=4000, write=100, thread="agent-1")

    v = _verdicts(store, ledger)
    assert v["healthy"]["busts"] == [] and v["healthy"]["inv1_misses"] == [] and v["healthy"]["share_ok"]
    (bust,) = v["busted"]["busts"]
    assert (bust["call"], bust["call_id"], bust["explained"]) == (4, "msg_busted_3", None)
    assert bust["capsule_changed_before"] and bust["ledger_ids"] == [eid]
    assert v["busted"]["alert"] and not v["busted"]["share_ok"]
    (idle,) = v["idle"]["busts"]
    assert idle["explained"].startswith("cache expired") and not idle["capsule_changed_before"]
    assert [m["call"] for m in v["idle"]["inv1_misses"]] == [3]
    assert [b["explained"] for b in v["compacted"]["busts"]] == ["compaction"]
    assert v["withsub"]["busts"] == [] and v["withsub"]["inv1_misses"] == []


def test_a_short_session_below_the_floor_is_explained_not_alerted(state_dir):
    store, ledger = UsageStore(), Ledger()
    _call(store, "short", 0, 1.0, read=0, write=8000)
    _call(store, "short", 1, 2.0, read=8000, write=4000)
    (v,) = cache.analyse(store.calls(), store.tools(), ledger.rows())
    assert not v["share_ok"] and not v["alert"] and v["explained_by"][0].startswith("short session")
