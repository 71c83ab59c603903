"""The proxy's route side on a scripted run: boundaries and decisions to the ledger, pins held for a
conversation, routine lanes degraded at the first boundary past the threshold, 0 capsule changes inside
a conversation, and one line for a 429."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import httpx2
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.fakes.cache import TimedCacheMessages as TimedCacheAPI, ramp  # noqa: E402

from capsule.store.route_rows import read  # noqa: E402
from capsule.policy.manifest import load_role  # noqa: E402
from capsule.proxy.app import Settings  # noqa: E402
from capsule.proxy.proxy_server import ProxyServer  # noqa: E402
from capsule.route import lanes  # noqa: E402

BILL = "x-anthropic-billing-header: cc_version=2.1.197.fa0; cc_entrypoint=sdk-cli;"
MAIN_SYS = [{"type": "text", "text": BILL}, {"type": "text", "text": "You are an interactive agent. " * 50,
                                              "cache_control": {"type": "ephemeral"}}]
SUB_SYS = [{"type": "text", "text": BILL + " cc_is_subagent=true;"},
           {"type": "text", "text": "You are a general-purpose agent. " * 50, "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}, {"name": "Read", "input_schema": {"type": "object"}}]


class Client:
    """A scripted client: conversations that grow by one exchange per call."""

    def __init__(self, url):
        self.url, self.convs = url, {}

    def call(self, conv: str, *, session: str, system, tools, model: str, effort: str | None = "medium",
             prompt: str | None = None):
        msgs = self.convs.setdefault(conv, [])
        if prompt is not None or not msgs:
            msgs.append({"role": "user", "content": prompt or f"start {conv}"})
        else:
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{len(msgs)}",
                                                      "content": "ok"}]})
        body = {"model": model, "max_tokens": 4000, "stream": True, "system": system, "tools": tools, "messages": msgs}
        if effort:
            body["output_config"] = {"effort": effort}
        r = httpx2.post(self.url + "/v1/messages", content=json.dumps(body).encode(), timeout=30,
                        headers={"content-type": "application/json", "x-api-key": "sk-test",
                                 "x-claude-code-session-id": session})
        if r.status_code == 200:
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{len(msgs) + 1}",
                                                           "name": "Bash", "input": {}}]})
        return r


@pytest.fixture
def run(tmp_path):
    role = load_role("python-dev")
    table = lanes.resolve(role, "claude", {}, ["claude"])
    made = []

    def start(fake):
        s = ProxyServer(Settings(state_dir=tmp_path, anthropic_upstream=fake.url, routing=table,
                                 agent_kind="claude")).start()
        made.append(s)
        return s

    yield start
    for s in made:
        s.stop()


def test_scripted_run_degrades_routine_lanes_at_the_next_boundary_only(run, tmp_path):
    # answer n carries the n-th 5h utilization: 10% .. 95%
    steps = [0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 0.92, 0.95, 0.95]
    fake = TimedCacheAPI(ratelimit=ramp(0, 0, 0, reset=2_000_000_000, steps=steps))
    try:
        server = run(fake)
        c = Client(server.url)
        main = dict(session="S1", system=MAIN_SYS, tools=TOOLS, model="claude-sonnet-4-5")
        sub = dict(session="S1", system=SUB_SYS, tools=TOOLS, model="claude-sonnet-4-5")
        for _ in range(3):
            c.call("main", **main)                        # answers 1-3
        for _ in range(3):
            c.call("subA", **sub)                         # 4-6: subagent A starts at 30%
        c.call("main", **main)                            # 7: 70%
        for _ in range(2):
            c.call("subC", **sub, prompt="task C")        # 8-9: C starts at 70%, just before the threshold
        c.call("subA", **sub)                             # 10: A goes on past 80%: keeps its lane (INV-9)
        for _ in range(2):
            c.call("subB", **sub, prompt="task B")        # 11-12: B starts at 92%: the next boundary
        models = [(e["model"], e["effort"]) for e in fake.log]
        keep = ("claude-sonnet-4-5", "medium")
        assert models[:10] == [keep] * 10
        assert models[10:12] == [("claude-haiku-4-5", "low")] * 2
        events = read(tmp_path / "ledger.db")
        decisions = [e for e in events if e["kind"] == "decision"]
        assert [(d["task_class"], d["detail"]["degraded"], d["detail"]["utilization"]) for d in decisions] == [
            ("main", False, 0.0), ("subagent", False, 0.3), ("subagent", False, 0.7), ("subagent", True, 0.92)]
        assert "degrade_at 80%" in decisions[-1]["reason"]
        assert sum(e["kind"] == "boundary" and e["reason"] == "conversation start" for e in events) == 4
        # INV-9 on the bodies the fake received: one model and effort per conversation
        per_conv: dict = {}
        for body in fake.requests:
            key = json.dumps([body["system"][1]["text"][:30], body["messages"][0]])
            per_conv.setdefault(key, set()).add((body["model"], (body.get("output_config") or {}).get("effort")))
        assert all(len(v) == 1 for v in per_conv.values()), per_conv
        assert server.proxy.route.stats["capsule_changes"] == 0
        assert not [e for e in events if e["kind"] == "change"]
        # the quota store saw every answer's headers
        from capsule.route.quota import QuotaStore, model as qmodel
        store = QuotaStore(tmp_path / "quota.db")
        q = qmodel(store.samples())
        store.close()
        five = next(w for w in q["windows"] if w["name"] == "5h")
        assert five["utilization"] == 0.95 and five["samples"] == 12
    finally:
        fake.close()


def test_a_users_model_switch_is_logged_as_theirs(run, tmp_path):
    fake = TimedCacheAPI(ratelimit=ramp(0.1, 0.2, 4, reset=2_000_000_000))
    try:
        c = Client(run(fake).url)
        c.call("main", session="S2", system=MAIN_SYS, tools=TOOLS, model="claude-sonnet-4-5")
        c.call("main", session="S2", system=MAIN_SYS, tools=TOOLS, model="claude-opus-4-8")   # the user's /model
        assert [e["model"] for e in fake.log] == ["claude-sonnet-4-5", "claude-opus-4-8"]
        changes = [e for e in read(tmp_path / "ledger.db") if e["kind"] == "change"]
        assert [(e["source"], e["detail"]["to"]["model"]) for e in changes] == [("user", "claude-opus-4-8")]
    finally:
        fake.close()


def test_a_429_gets_one_line_with_the_reset_and_no_retry(run, tmp_path, caplog):
    reset = 2_000_000_000
    headers = lambda n: {"anthropic-ratelimit-unified-status": "rejected",  # noqa: E731
                         "anthropic-ratelimit-unified-5h-utilization": "1.0",
                         "anthropic-ratelimit-unified-5h-reset": str(reset), "retry-after": "3600"}
    fake = TimedCacheAPI(ratelimit=headers, status=lambda n: 429)
    try:
        c = Client(run(fake).url)
        with caplog.at_level(logging.WARNING, logger="capsule.proxy"):
            r1 = c.call("main", session="S3", system=MAIN_SYS, tools=TOOLS, model="claude-sonnet-4-5")
            r2 = c.call("main", session="S3", system=MAIN_SYS, tools=TOOLS, model="claude-sonnet-4-5")
        assert r1.status_code == r2.status_code == 429
        assert r1.headers["x-should-retry"] == "false"
        lines = [r.getMessage() for r in caplog.records if "rate limit reached" in r.getMessage()]
        assert lines == ["capsule: anthropic rate limit reached (5h window at 100%); it resets at 03:33 UTC. "
                         "Not retrying until then."]
        notices = [e for e in read(tmp_path / "ledger.db") if e["kind"] == "notice"]
        assert len(notices) == 1 and notices[0]["detail"]["resets_at"] == reset
    finally:
        fake.close()


def test_an_api_key_session_over_its_spend_budget_degrades_its_next_subagent(tmp_path):
    """No rate-limit headers at all: the role's budget_usd_session against the cost engine's figures."""
    from dataclasses import replace

    from capsule.measure.usage import UsageStore, record_usage

    role = load_role("python-dev")
    table = replace(lanes.resolve(role, "claude", {}, ["claude"]), budget_usd_session=0.05)
    fake = TimedCacheAPI()
    server = ProxyServer(Settings(state_dir=tmp_path, anthropic_upstream=fake.url, routing=table,
                                  agent_kind="claude")).start()
    try:
        c = Client(server.url)
        c.call("subA", session="S4", system=SUB_SYS, tools=TOOLS, model="claude-sonnet-4-5")
        us = UsageStore(tmp_path / "usage.db")          # the session has spent $0.045 of 0.05 (90%)
        record_usage("S4", "claude", "claude-sonnet-4-5", "msg_spent", output_tokens=3000, store=us)
        us.close()
        c.call("subB", session="S4", system=SUB_SYS, tools=TOOLS, model="claude-sonnet-4-5", prompt="next")
        assert [e["model"] for e in fake.log] == ["claude-sonnet-4-5", "claude-haiku-4-5"]
        d = [e for e in read(tmp_path / "ledger.db") if e["kind"] == "decision"][-1]
        assert d["detail"]["window"] == "spend-session" and d["detail"]["degraded"]
    finally:
        server.stop()
        fake.close()
