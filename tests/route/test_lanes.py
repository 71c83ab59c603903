"""Lanes as data: [context.routing] maps task classes to model and effort; sources named; bad tables refused."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from capsule.policy.manifest import ManifestError, load_role
from capsule.route import lanes, subagents
from capsule.route.policy import decision_for, launch_args, router_for

ROLE = """\
schema = 1
name = "t"

[agent]
kind = "claude"
model = "claude-sonnet-4-5"

[context.routing]
effort_default = "medium"
degrade_at = 0.7

[context.routing.lanes.explore]
model = "claude-haiku-4-5"
effort = "minimal"

[context.routing.lanes.subagent]
model = "claude-sonnet-4-5"
degraded_model = "claude-haiku-4-5"
"""


def write(tmp_path, text):
    p = tmp_path / "r.toml"
    p.write_text(text)
    return p


def test_table_names_where_each_entry_came_from(tmp_path):
    role = load_role(write(tmp_path, ROLE))
    table = lanes.resolve(role, "claude", {}, ["claude"])
    assert table["main"].model == "claude-sonnet-4-5" and table["main"].model_from == "role r.toml:6"
    assert table["main"].effort == "medium" and table["main"].effort_from == "role r.toml:9"
    assert table["explore"].model_from == "role r.toml:13" and table["explore"].effort == "minimal"
    assert table["plan"].model is None and table["plan"].model_from == "client default"
    assert table.degrade_at == 0.7 and not table.degrade_main
    assert table["subagent"].degraded().model == "claude-haiku-4-5"
    assert table["explore"].degraded() == table["explore"]          # nothing cheaper named: unchanged


def test_env_and_user_flags_beat_the_role(tmp_path):
    role = load_role(write(tmp_path, ROLE))
    table = lanes.resolve(role, "claude", {"CLAUDE_CODE_EFFORT_LEVEL": "high", "ANTHROPIC_MODEL": "claude-opus-4-8"},
                          ["claude", "--model=claude-fable-5", "-p", "x"])
    assert table["main"].model == "claude-fable-5" and table["main"].model_from == "user flag --model"
    assert table["explore"].effort == "high" and table["explore"].effort_from == "env CLAUDE_CODE_EFFORT_LEVEL"
    router = router_for(role, enabled=True, kind="claude", env={"ANTHROPIC_MODEL": "claude-opus-4-8"}, argv=["claude"])
    argv, _ = router.launch(["claude", "-p", "x"], {})
    assert "--model" not in argv                  # the user's env chose the main model; capsule passes none
    assert argv[argv.index("--effort") + 1] == "medium"


def test_read_only_classes_get_pinned_session_definitions(tmp_path):
    role = load_role(write(tmp_path, ROLE))
    d = decision_for(lanes.resolve(role, "claude", {}, ["claude"]), "claude", "t")
    agents = json.loads(d.agents_json)
    assert agents["Explore"]["model"] == "claude-haiku-4-5"
    assert agents["Explore"]["effort"] == "low"             # Claude has no `minimal`: its nearest level
    assert "Plan" not in agents                             # no pin: the built-in Plan agent stays
    assert d.subagent_model is None                         # the env variable would override the pins
    argv, env = launch_args("claude", d, ["claude", "-p", "go"], {})
    assert argv[:1] == ["claude"] and argv[argv.index("--agents") + 1] == d.agents_json


def test_extensions_cannot_drop_the_pins(tmp_path, monkeypatch):
    role = load_role(write(tmp_path, ROLE))
    monkeypatch.setattr(subagents, "EXTENSIONS", [lambda cls, d: {**d, "prompt": d["prompt"] + "\nREPORT", "model": "x"}])
    defs = subagents.definitions(lanes.resolve(role, "claude", {}, []))
    assert defs["Explore"]["prompt"].endswith("REPORT") and defs["Explore"]["model"] == "claude-haiku-4-5"


def test_users_own_agents_are_kept_and_win(tmp_path):
    role = load_role(write(tmp_path, ROLE))
    d = decision_for(lanes.resolve(role, "claude", {}, []), "claude", "t")
    mine = json.dumps({"Explore": {"description": "mine", "prompt": "p"}, "rev": {"description": "r", "prompt": "p"}})
    argv, _ = launch_args("claude", d, ["claude", "--agents", mine], {})
    merged = json.loads(argv[argv.index("--agents") + 1])
    assert argv.count("--agents") == 1 and merged["Explore"]["description"] == "mine" and "rev" in merged


def test_codex_plan_effort_and_effort_mapping(tmp_path):
    role = load_role(write(tmp_path, ROLE.replace('kind = "claude"', 'kind = "codex"').replace(
        'model = "claude-sonnet-4-5"\n\n[context.routing]', 'model = "gpt-5.5"\n\n[context.routing]')
        + '\n[context.routing.lanes.plan]\neffort = "max"\n'))
    router = router_for(role, enabled=True, kind="codex", env={}, argv=["codex"])
    argv, _ = router.launch(["codex", "exec", "x"], {})
    assert argv == ["codex", "-m", "gpt-5.5", "-c", 'model_reasoning_effort="medium"',
                    "-c", 'plan_mode_reasoning_effort="xhigh"', "exec", "x"]


@pytest.mark.parametrize("snippet,line,key", [
    ('[context.routing.lanes.main]\nmodle = "x"\n', 21, '"modle"'),
    ('[context.routing.lanes.turbo]\nmodel = "x"\n', 20, '"turbo"'),
    ('[context.routing.lanes.main]\neffort = "extreme"\n', 21, "context.routing.lanes.main.effort"),
])
def test_bad_routing_tables_name_file_line_and_key(tmp_path, snippet, line, key):
    path = write(tmp_path, ROLE + "\n" + snippet)
    with pytest.raises(ManifestError) as err:
        load_role(path)
    assert f"role {path} line {line}:" in str(err.value) and key in str(err.value)


def test_bad_degrade_threshold_exits_2_from_the_cli(tmp_path):
    path = write(tmp_path, ROLE.replace("degrade_at = 0.7", "degrade_at = 1.5"))
    proc = subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor", "--role", str(path)],
                          capture_output=True, text=True, env={"JACKIN_CTX_STATE_DIR": str(tmp_path / "s"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    assert f"role {path} line 10: bad value for \"context.routing.degrade_at\"" in proc.stderr


def test_doctor_shows_the_resolved_table(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor", "--role", "python-dev", "--json"],
                          capture_output=True, text=True, env={"JACKIN_CTX_STATE_DIR": str(tmp_path / "s"),
                                                               "PATH": "/usr/bin:/bin", "CLAUDE_CODE_EFFORT_LEVEL": "high"})
    assert proc.returncode == 0, proc.stderr
    rt = json.loads(proc.stdout)["routing"]
    by = {ln["task_class"]: ln for ln in rt["lanes"]}
    assert set(by) == set(lanes.CLASSES)
    assert by["explore"]["model"] == "claude-haiku-4-5" and by["explore"]["model_from"].startswith("role python-dev.toml:")
    assert by["main"]["effort_from"] == "env CLAUDE_CODE_EFFORT_LEVEL"
