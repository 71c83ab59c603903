"""Route layer end to end with the real Claude Code and the real Codex through `capsule up --local`,
against a fake model API whose answers carry rate-limit headers ramping 10% -> 95% over a scripted
multi-session run with subagents. Checked on what the fake received and on capsule's own reports:
the quota report matches the headers; a routine lane is priced at the first boundary after the
threshold and not before, and moves (Codex: effort only, no cache to rewrite) or stays (Claude: the
degrade would not pay for its cache write) with both figures in the ledger; 0 capsule-initiated model/effort changes inside a
conversation; cache-read share from call 2 of every conversation >= 85% on the fake's cache model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.fakes.cache import TimedCacheMessages as TimedCacheAPI, ramp  # noqa: E402

from tests.measure import clients  # noqa: E402

ROLE = """\
schema = 1
name = "route-e2e"

[agent]
kind = "claude"
model = "claude-sonnet-4-5"

[context]
mode = "standard"

[context.routing]
effort_default = "medium"
degrade_at = 0.8

[context.routing.lanes.explore]
model = "claude-haiku-4-5"

[context.routing.lanes.subagent]
model = "claude-sonnet-4-5"
degraded_model = "claude-haiku-4-5"

[context.routing.lanes.background]
model = "claude-haiku-4-5"
"""
SESSIONS = 3
# answer n carries STEPS[n-1]: 10% .. 98% over the run, still rising at call 20 so that the third
# session sees a rise however many calls Claude Code makes in the first two (each makes 5-7)
STEPS = [0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70, 0.78, 0.82, 0.86, 0.90, 0.92, 0.94, 0.95,
         0.955, 0.96, 0.965, 0.97, 0.975, 0.98]


def is_sub(body) -> bool:
    sys_ = body.get("system")
    return isinstance(sys_, list) and bool(sys_) and "cc_is_subagent=true" in str(sys_[0].get("text", ""))


def script(body, turn):
    names = [t.get("name") for t in body.get("tools") or []]
    if is_sub(body) or "Agent" not in names:
        return [{"type": "text", "text": "found: src/app.py:3"}]
    if turn == 0:
        return [{"type": "tool_use", "id": "toolu_e0", "name": "Agent",
                 "input": {"description": "find it", "prompt": "find the entry point", "subagent_type": "Explore"}}]
    if turn == 1:
        return [{"type": "tool_use", "id": "toolu_g1", "name": "Agent",
                 "input": {"description": "do it", "prompt": "summarise the module", "subagent_type": "general-purpose"}}]
    return [{"type": "text", "text": "done"}]


def conv_key(body) -> str:
    """One conversation: its session, system prompt and first message (cache markers aside)."""
    sys_ = body.get("system") or []
    text = "".join(b.get("text", "") for b in sys_[1:]) if isinstance(sys_, list) else str(sys_)
    session = json.loads((body.get("metadata") or {}).get("user_id") or "{}").get("session_id")
    first = (body.get("messages") or [{}])[0]
    blocks = [{k: v for k, v in b.items() if k != "cache_control"} for b in first.get("content") or []
              if isinstance(b, dict)] if isinstance(first.get("content"), list) else first.get("content")
    return json.dumps([session, text[:400], blocks], sort_keys=True)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("route-ws")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    return ws


def ctx(run, *args):
    proc = subprocess.run([sys.executable, "-m", "capsule", "ctx", *args], env=run["env"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def claude_run(tmp_path_factory, workspace):
    tmp = tmp_path_factory.mktemp("route-claude")
    state = tmp / "state"
    state.mkdir(mode=0o700)
    role = tmp / "role.toml"
    role.write_text(ROLE)
    fake = TimedCacheAPI(script, ratelimit=ramp(0, 0, 0, reset=2_000_000_000, steps=STEPS))
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp / "cc"), "ANTHROPIC_BASE_URL": fake.url,
           "ANTHROPIC_API_KEY": "test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "IS_SANDBOX": "1", "JACKIN_CTX_STATE_DIR": str(state), "HOME": str(tmp)}
    env.pop("JACKIN_CTX_ROLE", None)
    outs = []
    try:
        for i in range(SESSIONS):
            cmd = [sys.executable, "-m", "capsule", "up", "--role", str(role), "--local", "--",
                   clients.client("claude"), "-p", f"task {i}", "--allowedTools", "Agent,Read,Bash"]
            proc = subprocess.run(cmd, cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
                                  stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
            outs.append(proc)
    finally:
        fake.close()
    yield {"fake": fake, "state": state, "env": env, "outs": outs}


def test_claude_lanes_degrade_at_the_next_boundary_and_never_inside(claude_run):
    fake = claude_run["fake"]
    log = fake.log
    assert len(log) >= SESSIONS * 5, [(e["model"], e["usage"]) for e in log]
    convs: dict[str, list[int]] = {}
    for i, body in enumerate(fake.requests):
        convs.setdefault(conv_key(body), []).append(i)
    # 0 model or effort changes inside a conversation, on the bodies the fake received
    for idx in convs.values():
        assert len({(fake.requests[i]["model"], (fake.requests[i].get("output_config") or {}).get("effort"))
                    for i in idx}) == 1
    seen_u = lambda i: STEPS[min(i, len(STEPS)) - 1] if i else 0.0  # noqa: E731 - utilization known before request i
    general, explore = [], []
    for idx in convs.values():
        first = fake.requests[idx[0]]
        if not is_sub(first):
            assert first["model"] == "claude-sonnet-4-5"               # main never degrades (degrade_main false)
            continue
        text = json.dumps(first["system"])
        (explore if "read-only file search specialist" in text else general).append((idx[0], first["model"]))
    assert len(explore) == SESSIONS and len(general) == SESSIONS
    assert all(m == "claude-haiku-4-5" for _, m in explore)            # the pinned Explore definition
    # The run crosses the threshold before the third session, but a one-call general subagent would
    # write its 16k-token prefix again on haiku: the move does not pay (route/payoff.py) and the lane stays.
    assert any(seen_u(i) >= 0.8 for i, _ in general)
    assert {m for _, m in general} == {"claude-sonnet-4-5"}
    # cache-read share from call 2 of every conversation on the fake's cache model
    for idx in convs.values():
        for i in idx[1:]:
            u = log[i]["usage"]
            share = u["cache_read_input_tokens"] / (u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
                                                    + u["input_tokens"])
            assert share >= 0.85, (i, u)


def test_claude_quota_report_and_decision_log_match_the_headers(claude_run):
    quota = ctx(claude_run, "quota", "--json")
    five = next(w for w in quota["windows"] if w["name"] == "5h")
    last = claude_run["fake"].log[-1]["headers"]
    assert five["utilization"] == pytest.approx(float(last["anthropic-ratelimit-unified-5h-utilization"]))
    assert five["resets_at"] == 2_000_000_000 and five["samples"] == len(claude_run["fake"].log)
    assert abs(sum(s["share"] for s in quota["sessions"]) - 1) < 0.01 and len(quota["sessions"]) == SESSIONS
    r = ctx(claude_run, "report", "--json")["route"]
    assert r["audit"]["capsule_changes"] == 0
    assert not [d for d in r["decisions"] if d["degraded"]]
    events = _events(claude_run["state"])
    priced = [e for e in events if e["kind"] == "decision" and "payoff" in e["detail"]]
    assert priced and all(e["task_class"] == "subagent" and e["detail"]["utilization"] >= 0.8 for e in priced)
    for e in priced:      # both figures in the ledger: the saving over the lane's calls, the cache write
        p = e["detail"]["payoff"]
        assert not p["pays"] and p["warm"] and p["cache_write_usd"] > p["saving_usd"] > 0, p
        assert "does not pay" in e["reason"]
    # Claude Code's own hooks wrote the boundaries too: each session's start, prompt and subagents
    hooks = [e for e in _events(claude_run["state"]) if e["source"] == "claude hook"]
    reasons = [e["reason"] for e in hooks]
    assert reasons.count("session startup") == SESSIONS and reasons.count("user prompt") == SESSIONS, reasons
    assert reasons.count("subagent start") == 2 * SESSIONS
    assert sum(r.startswith("session end") for r in reasons) == SESSIONS
    assert sorted(e["detail"]["agent_type"] for e in hooks if e["reason"] == "subagent start") == \
        ["Explore"] * SESSIONS + ["general-purpose"] * SESSIONS


def _events(state):
    from capsule.store.route_rows import read

    return read(state / "ledger.db")


# ---- Codex -------------------------------------------------------------------------------------------
CODEX_ROLE = """\
schema = 1
name = "route-e2e-codex"

[agent]
kind = "codex"
model = "gpt-5.5"

[context]
mode = "standard"

[context.routing]
effort_default = "medium"
degrade_at = 0.8
degrade_main = true

[context.routing.lanes.main]
degraded_effort = "low"
"""
# answer n carries CODEX_STEPS[n-1]; two answers a session: the 3rd session starts past 80%
CODEX_STEPS = [0.10, 0.40, 0.70, 0.85, 0.90, 0.95]


def codex_script(body, done):
    if done == 0:
        return [{"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "exec_command",
                 "arguments": json.dumps({"cmd": "echo alpha"}), "status": "completed"}]
    return [{"type": "message", "role": "assistant", "id": "msg_x",
             "content": [{"type": "output_text", "text": "done", "annotations": []}]}]


@pytest.fixture(scope="module")
def codex_run(tmp_path_factory, workspace):
    from tests.fakes.cache import CachingResponses as ResponsesCacheAPI, openai_ramp

    tmp = tmp_path_factory.mktemp("route-codex")
    state = tmp / "state"
    state.mkdir(mode=0o700)
    role = tmp / "role.toml"
    role.write_text(CODEX_ROLE)
    fake = ResponsesCacheAPI(codex_script, ratelimit=openai_ramp(CODEX_STEPS))
    home = tmp / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(fake.provider_config())
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": "test", "JACKIN_CTX_STATE_DIR": str(state),
           "HOME": str(tmp)}
    env.pop("JACKIN_CTX_ROLE", None)
    try:
        for i in range(3):
            cmd = [sys.executable, "-m", "capsule", "up", "--role", str(role), "--local", "--",
                   clients.client("codex"), "exec", "--skip-git-repo-check",
                   "--dangerously-bypass-approvals-and-sandbox", f"task {i}"]
            proc = subprocess.run(cmd, cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
                                  stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    finally:
        fake.close()
    yield {"fake": fake, "state": state, "env": env, "home": home}


def test_codex_degrades_at_the_next_session_start_and_never_inside(codex_run):
    fake = codex_run["fake"]
    assert len(fake.log) == 6, [(e["model"], e["effort"]) for e in fake.log]
    convs: dict[str, list[int]] = {}
    for i, body in enumerate(fake.requests):
        convs.setdefault(body.get("prompt_cache_key") or json.dumps(body["input"][:1]), []).append(i)
    assert len(convs) == 3
    per = [sorted({(fake.requests[i]["model"], (fake.requests[i].get("reasoning") or {}).get("effort")) for i in idx})
           for idx in convs.values()]
    # one model and effort per conversation; sessions 1-2 at the role's effort, session 3 degraded at launch
    assert per == [[("gpt-5.5", "medium")], [("gpt-5.5", "medium")], [("gpt-5.5", "low")]]
    for idx in convs.values():
        for i in idx[1:]:
            u = fake.log[i]["usage"]
            assert u["input_tokens_details"]["cached_tokens"] / u["input_tokens"] >= 0.85, u
    quota = ctx(codex_run, "quota", "--json")
    tokens = next(w for w in quota["windows"] if w["name"] == "tokens" and w["api"] == "openai")
    assert tokens["utilization"] == pytest.approx(0.95) and tokens["regime"] == "api_key"
    # Codex 0.171 writes the x-codex-primary-* headers into its rollout's rate_limits: ingested too
    rollout = next(w for w in quota["windows"] if w["account"] == "openai:codex-rollout")
    assert rollout["name"] == "5h" and rollout["utilization"] == pytest.approx(0.95)
    assert rollout["resets_at"] == 2_000_000_000
    r = ctx(codex_run, "report", "--json", "--codex-dir", str(codex_run["home"]))["route"]
    assert r["audit"]["capsule_changes"] == 0 and r["audit"]["in_conversation"] == []
    starts = [d for d in r["decisions"] if d["reason"].startswith("session start")]
    assert [d["degraded"] for d in starts] == [False, False, True]
    assert starts[-1]["utilization"] == pytest.approx(0.85)
    assert r["boundaries"].get("session start") == 3        # from the rollouts
