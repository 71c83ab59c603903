"""A lane change priced with the cache it costs (route/payoff.py): on the proxy's boundary, with the
usage store's recorded conversations as history, a degrade that would not pay is not made and one
that pays is, each decision in the ledger's route log with both figures."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_proxy_routing import SUB_SYS, TOOLS, Client, run  # noqa: E402,F401 - run: the proxy fixture

from capsule.store.route_rows import read  # noqa: E402
from capsule.measure.usage import UsageStore, record_usage  # noqa: E402
from capsule.route import payoff  # noqa: E402
from tests.fakes.cache import TimedCacheMessages as TimedCacheAPI, ramp  # noqa: E402

SONNET, HAIKU = "claude-sonnet-4-5", "claude-haiku-4-5"


def threads(n_threads: int, calls_each: int, *, prefix: int, fresh: int, out: int, model: str = SONNET):
    """Recorded subagent conversations, the last ended 2 minutes ago (its prefix is still warm): the
    first call reads the shared prefix. Stamped when called: collection may be long before the test."""
    now, rows = time.time() - 120, []
    for t in range(n_threads):
        for i in range(calls_each):
            rows.append({"agent": "claude", "call_id": f"msg_{t}_{i}", "session_id": f"S{t}", "thread_id": f"agent{t}",
                         "model": model, "ts": now + t / 10 + i / 1000, "input_tokens": fresh,
                         "cache_read_input_tokens": prefix + i * (fresh + out), "cache_creation_5m": (fresh + out) if i else 0,
                         "cache_creation_1h": 0, "output_tokens": out})
    return rows


def test_a_one_call_subagent_does_not_pay_for_rewriting_a_20k_prefix():
    hist = payoff.history(threads(3, 1, prefix=20_000, fresh=500, out=100), SONNET, subagent=True)
    assert hist.conversations == 3 and hist.calls == 1 and hist.prefix_tokens == 20_000
    p = payoff.price(SONNET, HAIKU, hist)
    # saving: 500 fresh at $2/M less + 100 out at $10/M less = $0.002
    assert p.saving_usd == pytest.approx(0.002)
    # the write: 20k on haiku at $1.25/M instead of a read on sonnet at $0.30/M
    assert p.cache_write_usd == pytest.approx(20_000 * (1.25 - 0.30) / 1e6)
    assert not p.pays


def test_a_long_subagent_pays_for_its_cache_write():
    hist = payoff.history(threads(2, 30, prefix=20_000, fresh=4_000, out=800), SONNET, subagent=True)
    assert hist.calls == 30
    p = payoff.price(SONNET, HAIKU, hist)
    assert p.pays and p.saving_usd > 10 * p.cache_write_usd


def test_history_is_the_lanes_own_model_and_kind():
    rows = threads(2, 3, prefix=1000, fresh=10, out=10)
    assert payoff.history(rows, HAIKU, subagent=True) is None           # none ran on haiku
    assert payoff.history(rows, SONNET, subagent=False) is None         # these are subagent threads
    assert payoff.history(rows, "claude-sonnet-4-5-20250929", subagent=True).conversations == 2
    assert payoff.price(SONNET, "no-such-model", payoff.history(rows, SONNET, True)) is None


def _seed(state: Path, rows: list[dict]) -> None:
    us = UsageStore(state / "usage.db")
    try:
        for r in rows:
            record_usage(r["session_id"], "claude", r["model"], r["call_id"], input_tokens=r["input_tokens"],
                         cache_read_input_tokens=r["cache_read_input_tokens"], cache_creation_5m=r["cache_creation_5m"],
                         output_tokens=r["output_tokens"], ts=r["ts"], source="transcript", thread=r["thread_id"],
                         store=us)
    finally:
        us.close()


@pytest.mark.parametrize("calls_each, degraded", [(1, False), (30, True)])
def test_the_proxy_degrades_a_subagent_only_when_it_pays(run, tmp_path, calls_each, degraded):
    _seed(tmp_path, threads(3, calls_each, prefix=20_000, fresh=4_000 if degraded else 500, out=800 if degraded else 100))
    fake = TimedCacheAPI(ratelimit=ramp(0, 0, 0, reset=2_000_000_000, steps=[0.95] * 4))
    try:
        c = Client(run(fake).url)
        sub = dict(session="S9", system=SUB_SYS, tools=TOOLS, model=SONNET)
        c.call("subA", **sub)                           # 0%: nothing known yet
        c.call("subB", **sub, prompt="task B")          # B starts at 95%: priced on the 3 recorded threads
        c.call("subB", **sub)
        d = [e for e in read(tmp_path / "ledger.db") if e["kind"] == "decision"][-1]
        assert [e["model"] for e in fake.log] == [SONNET] + [HAIKU if degraded else SONNET] * 2, (d["reason"], d["detail"])
        d = [e for e in read(tmp_path / "ledger.db") if e["kind"] == "decision"][-1]
        assert d["detail"]["degraded"] is degraded and d["detail"]["utilization"] == 0.95
        figures = d["detail"]["payoff"]
        assert figures["pays"] is degraded and figures["expected_calls"] == calls_each
        assert figures["cache_write_usd"] == pytest.approx(20_000 * 0.95 / 1e6)
        assert (figures["saving_usd"] > figures["cache_write_usd"]) is degraded
        assert ("does not pay" in d["reason"]) is not degraded and "$" in d["reason"]
    finally:
        fake.close()


def test_a_cold_prefix_costs_nothing_extra_to_move():
    """The lane's last conversation is older than the cache's 5 minutes: staying writes it too."""
    rows = threads(3, 1, prefix=20_000, fresh=500, out=100)
    hist = payoff.history(rows, SONNET, subagent=True, now=time.time() + 3600)
    assert not hist.warm
    p = payoff.price(SONNET, HAIKU, hist)
    assert p.cache_write_usd == 0 and p.pays
