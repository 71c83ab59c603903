"""Routing: role → launch flags for the real agents; changes only at task boundaries (INV-9)."""

from __future__ import annotations

import subprocess

import pytest

from capsule.policy.manifest import load_role
from capsule.ground.switches import Switches
from capsule.route.policy import Decision, launch_args, router_for


def test_python_dev_role_routes_claude_model_and_effort():
    role = load_role("python-dev")
    router = router_for(role, Switches.read({}))
    argv, env = router.launch(["claude"], {})
    assert argv[:1] == ["claude"]
    assert "--model" in argv and argv[argv.index("--model") + 1] == role.agent.model
    assert "--effort" in argv and argv[argv.index("--effort") + 1] == role.context.routing["effort_default"]


def test_no_routing_switch_changes_nothing():
    role = load_role("python-dev")
    router = router_for(role, Switches.read({"JACKIN_CTX_NO_ROUTING": "1"}))
    assert router.launch(["claude", "-p", "hi"], {}) == (["claude", "-p", "hi"], {})


def test_user_flags_win_over_the_role():
    argv, _ = launch_args("claude", Decision(model="opus", effort="high"), ["claude", "--model", "haiku"], {})
    assert argv.count("--model") == 1 and "haiku" in argv and "--effort" in argv


def test_codex_effort_goes_through_config_override():
    argv, _ = launch_args("codex", Decision(model="gpt-5", effort="low"), ["codex", "exec", "x"], {})
    assert argv == ["codex", "-m", "gpt-5", "-c", 'model_reasoning_effort="low"', "exec", "x"]


def test_subagent_model_goes_to_claude_env():
    _, env = launch_args("claude", Decision(subagent_model="claude-haiku-4-5"), ["claude"], {})
    assert env["CLAUDE_CODE_SUBAGENT_MODEL"] == "claude-haiku-4-5"


def test_changes_wait_for_a_task_boundary():
    role = load_role("python-dev")
    router = router_for(role, Switches.read({}))
    before = router.current
    router.request(effort="high", reason="failing build")
    assert router.current == before                      # mid-task: unchanged
    assert router.launch(["claude"], {}) == router_for(role, Switches.read({})).launch(["claude"], {})
    after = router.task_boundary()
    assert after.effort == "high" and router.current == after and router.history == [before]
    with pytest.raises(ValueError):
        router.request(effort="turbo", reason="bad")


def test_generated_flags_are_accepted_by_the_real_clients():
    """The real CLIs parse what we generate (no model call: --help exits before any request)."""
    argv, _ = launch_args("claude", Decision(model="sonnet", effort="medium"), ["claude", "--help"], {})
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    argv, _ = launch_args("codex", Decision(model="gpt-5", effort="low"), ["codex", "exec", "--help"], {})
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_a_wrapped_agent_gets_the_flags_at_the_end():
    argv, _ = launch_args("claude", Decision(model="m", effort="low"), ["bash", "-c", 'exec claude "$@"', "agent"], {})
    assert argv == ["bash", "-c", 'exec claude "$@"', "agent", "--model", "m", "--effort", "low"]
