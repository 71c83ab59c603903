"""Role manifests: shipped roles load; unknown keys and bad values are refused with file, key, line, hint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from capsule.policy.manifest import ManifestError, load_role, role_names
from capsule.ground import switches
from capsule.policy.plan import effective_mode, plan

GOOD = """\
schema = 1
name = "t"

[agent]
kind = "shell"
env = { A = "1" }

[context]
mode = "standard"
languages = ["python"]
standing_budget = 100

[context.routing]
effort_default = "low"
"""


def write(tmp_path: Path, text: str, name: str = "role.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_roles_load_with_their_modes():
    assert {"default", "python-dev", "aggressive"} <= set(role_names())
    assert load_role("default").context.mode == "measure"
    assert load_role("python-dev").context.mode == "standard"
    assert load_role("aggressive").context.mode == "aggressive"
    assert load_role("python-dev").agent.kind == "claude"


def test_role_by_path_and_defaults(tmp_path):
    role = load_role(write(tmp_path, GOOD))
    assert role.name == "t" and role.agent.command == ("bash",) and role.agent.env == {"A": "1"}
    assert role.context.languages == ("python",) and role.context.standing_budget == 100
    assert role.workspace_mount == "/workspace"
    minimal = load_role(write(tmp_path, 'schema = 1\nname = "m"\n[agent]\nkind = "codex"\n', "m.toml"))
    assert minimal.context.mode == "measure"  # new roles default to measure


@pytest.mark.parametrize("text, line, needle", [
    (GOOD.replace('mode = "standard"', 'mode = "standard"\nturbo_mode = true'), 10,
     'unknown key "turbo_mode" in [context]; allowed: filters, languages, media, mode'),
    (GOOD.replace('mode = "standard"', 'mode = "fast"'), 9, "bad value for \"context.mode\": 'fast'; hint: one of 'off'"),
    (GOOD.replace('kind = "shell"', 'kind = "vim"'), 5, "\"agent.kind\""),
    (GOOD.replace('effort_default = "low"', 'effort_default = 3'), 14, "context.routing.effort_default"),
    (GOOD.replace('env = { A = "1" }', 'env = { A = 1 }'), 6, "agent.env.A"),
    (GOOD.replace("schema = 1", "schema = 9"), 1, 'key "schema" is 9; hint: set schema = 1'),
    (GOOD + "\n[gpu]\ncount = 1\n", 16, 'unknown key "gpu" in the top level'),
    (GOOD.replace('name = "t"\n', ""), 1, 'missing key "name"'),
])
def test_bad_manifest_names_file_key_line_and_hint(tmp_path, text, line, needle):
    path = write(tmp_path, text)
    with pytest.raises(ManifestError) as info:
        load_role(path)
    message = str(info.value)
    assert message.startswith(f"role {path} line {line}:"), message
    assert needle in message


def test_bad_toml_and_unknown_role(tmp_path):
    with pytest.raises(ManifestError, match="line 2"):
        load_role(write(tmp_path, 'schema = 1\nname = \n'))
    with pytest.raises(ManifestError, match="known roles: aggressive, default, python-dev"):
        load_role("no-such-role")


def test_cli_refuses_bad_manifest_with_exit_2_and_starts_nothing(tmp_path):
    marker = tmp_path / "started"
    bad = write(tmp_path, GOOD.replace('mode = "standard"', 'mode = "standard"\nturbo = 1'))
    proc = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", str(bad), "--local", "--",
                           "touch", str(marker)], capture_output=True, text=True,
                          env={"JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    assert f"role {bad} line 10: unknown key \"turbo\"" in proc.stderr
    assert not marker.exists()
    assert not (tmp_path / "state" / "engine.sock").exists()


def test_plan_names_the_reason_for_each_subsystem(tmp_path):
    role = load_role("python-dev")
    on = plan(role, switches.Switches.read({}))
    assert all(d.on for d in on.values()), on
    off = plan(role, switches.Switches.read({switches.NO_SHIMS: "1", switches.NO_ROUTING: "yes"}))
    assert not off["shims"].on and off["shims"].reason == "switch JACKIN_CTX_NO_SHIMS"
    assert not off["routing"].on and "NO_ROUTING" in off["routing"].reason
    assert off["engine"].on and off["mcp"].on
    master = plan(role, switches.Switches.read({switches.DISABLE: "1"}))
    assert not any(d.on for d in master.values())
    assert effective_mode(role, switches.Switches.read({switches.MEASURE_ONLY: "1"})) == "measure"
    shell = plan(load_role("default"), switches.Switches.read({}))
    assert not shell["register"].on and "shell" in shell["register"].reason
    # The default role ships a [context.routing] (issue 18: degrade at 95%); a role without one
    # still says why routing is off.
    assert shell["routing"].on
    bare = load_role(write(tmp_path, GOOD.replace('[context.routing]\neffort_default = "low"\n', "")))
    routing = plan(bare, switches.Switches.read({}))["routing"]
    assert not routing.on and "[context.routing]" in routing.reason
