"""The advisor lane: a cheaper main model that consults a stronger one for plans and reviews, as a
session-scoped Claude Code subagent pinned to the advisor's model; refused for clients without pins.
And batch_lane is gone from the schema (no client sends background work to a batch API)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from capsule.ground.switches import Switches
from capsule.policy.manifest import ManifestError, load_role
from capsule.route.policy import router_for
from tests.fakes.anthropic import MessagesAPI
from tests.measure import clients

ROLE = """\
schema = 1
name = "advised"

[agent]
kind = "{kind}"
model = "{main}"

[context]
mode = "standard"

[context.routing]
advisor = "claude-opus-4-8"
"""


def role_file(tmp_path, kind="claude", main="claude-haiku-4-5", extra=""):
    p = tmp_path / "advised.toml"
    p.write_text(ROLE.format(kind=kind, main=main) + extra)
    return p


def agents_of(argv: list[str]) -> dict:
    return json.loads(argv[argv.index("--agents") + 1])


def test_the_advisor_is_a_pinned_subagent_beside_a_cheap_main_lane(tmp_path):
    router = router_for(load_role(role_file(tmp_path)), Switches.read({}))
    argv, _ = router.launch(["claude", "-p", "x"], {})
    assert argv[argv.index("--model") + 1] == "claude-haiku-4-5"
    adv = agents_of(argv)["advisor"]
    assert adv["model"] == "claude-opus-4-8" and set(adv["tools"]) == {"Read", "Grep", "Glob"}
    assert "review" in adv["description"] and "never create, modify or delete" in adv["prompt"]
    again, _ = router_for(load_role(role_file(tmp_path)), Switches.read({})).launch(["claude", "-p", "x"], {})
    assert again == argv                                    # the same bytes every launch (caches hold)


def test_no_advisor_no_definition(tmp_path):
    p = tmp_path / "plain.toml"
    p.write_text(ROLE.format(kind="claude", main="claude-haiku-4-5").replace('advisor = "claude-opus-4-8"\n', ""))
    argv, _ = router_for(load_role(p), Switches.read({})).launch(["claude"], {})
    assert "--agents" not in argv or "advisor" not in agents_of(argv)


def test_an_advisor_for_codex_is_refused_with_its_line(tmp_path):
    p = role_file(tmp_path, kind="codex", main="gpt-5.5")
    with pytest.raises(ManifestError, match=r'line 12: "context.routing.advisor" needs Claude Code'):
        load_role(p)


def test_batch_lane_is_no_longer_a_key(tmp_path):
    p = role_file(tmp_path, extra="batch_lane = true\n")
    with pytest.raises(ManifestError, match=r'unknown key "batch_lane" in \[context.routing\]'):
        load_role(p)


def test_the_real_claude_code_runs_the_advisor_on_its_model(tmp_path):
    """Claude Code 'as it ships' honours the definition: the main lane asks the advisor, and the
    advisor's request reaches the API on the advisor's model."""
    def script(body, turn):
        system = json.dumps(body.get("system") or "")
        if "You are the advisor" in system:
            return [{"type": "text", "text": "go: the plan is sound"}]
        names = [t.get("name") for t in body.get("tools") or []]
        if "Agent" not in names:
            return [{"type": "text", "text": "side answer"}]
        if turn == 0:
            return [{"type": "tool_use", "id": "toolu_adv", "name": "Agent",
                     "input": {"description": "review", "prompt": "review the plan", "subagent_type": "advisor"}}]
        return [{"type": "text", "text": "done"}]

    router = router_for(load_role(role_file(tmp_path)), Switches.read({}))
    argv, env = router.launch([clients.client("claude"), "-p", "plan it", "--allowedTools", "Agent,Read"], {})
    fake = MessagesAPI(script)
    try:
        run_env = {**os.environ, **env, "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "HOME": str(tmp_path),
                   "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test", "IS_SANDBOX": "1",
                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
        proc = subprocess.run(argv, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Consult before committing to a plan" in json.dumps(fake.requests[0])   # offered to the main lane
        advised = [b for b in fake.requests if "You are the advisor" in json.dumps(b.get("system") or "")]
        assert advised and {b["model"] for b in advised} == {"claude-opus-4-8"}
        assert fake.requests[0]["model"] == "claude-haiku-4-5"
    finally:
        fake.close()
