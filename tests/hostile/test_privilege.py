"""Issue 31, privilege: nothing a role file or an environment says makes the agent root or gives it
capabilities; `up`, compose replicas, compose.yaml and the Kubernetes manifests confine it alike.

Offline (argv, rendered files, the supervisor's re-check in-process); tests/container/test_privilege_engine.py
runs the same rules on the real Docker engine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from capsule.cli.runtime import docker_run_argv, run_as
from capsule.fleet import render
from capsule.ground.errors import UserError
from capsule.ground.reserved import CAPABILITIES
from capsule.policy.manifest import ManifestError, load_role

ROLE = 'schema = 1\nname = "theirs"\n[agent]\nkind = "shell"\n[agent.env]\nFOO = "bar"\n{line}\n'


def resolve_role(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "theirs.toml"
    path.write_text(ROLE.format(line=line))
    return path


def _workspace(tmp_path: Path, uid: int = 1000) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    os.chown(ws, uid, uid)
    return ws


@pytest.mark.parametrize("name", ["JACKIN_CTX_RUN_AS", "CAPSULE_USER", "JACKIN_CTX_STATE_DIR", "JACKIN_CTX_ROLE"])
def test_a_role_that_sets_who_the_agent_runs_as_is_refused_naming_key_and_line(tmp_path, name):
    path = resolve_role(tmp_path, f'{name} = "0:0"')
    with pytest.raises(ManifestError) as exc:
        load_role(path)
    msg = str(exc.value)
    assert f"role {path} line 7:" in msg and name in msg and "\n" not in msg


def test_up_e_cannot_pass_the_run_as_id_either(tmp_path):
    ws = _workspace(tmp_path)
    got = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", "default", "--workspace", str(ws),
                          "-e", "JACKIN_CTX_RUN_AS=0:0", "--", "true"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"})
    assert got.returncode == 2 and "-e JACKIN_CTX_RUN_AS" in got.stderr and "--user" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr


def test_capsules_own_ids_are_the_last_env_and_loader_variables_never_reach_pid_1(tmp_path):
    """docker keeps the last -e of a name; the role's LD_PRELOAD/PYTHONPATH would run as root in PID 1
    before the supervisor drops (the supervisor gives them to the agent itself)."""
    path = resolve_role(tmp_path, 'LD_PRELOAD = "/workspace/evil.so"\nPYTHONPATH = "/workspace"\nPYTHONDONTWRITEBYTECODE = "1"')
    role = load_role(path)
    ws = _workspace(tmp_path, 501)
    argv = docker_run_argv(role, {}, [], image="capsule:dev", name="c", workspace=ws, detach=True,
                           interactive=False, user=run_as(ws, None))
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert envs[-1] == "JACKIN_CTX_RUN_AS=501:20" or envs[-1] == "JACKIN_CTX_RUN_AS=501:501"
    assert not any(e.startswith(("LD_PRELOAD=", "PYTHONPATH=")) for e in envs), envs
    assert "PYTHONDONTWRITEBYTECODE=1" in envs and "FOO=bar" in envs
    compose = render.compose(role, 1, "capsule:dev", ws, user=run_as(ws, None))["services"]["theirs-1"]
    assert "LD_PRELOAD" not in compose["environment"] and "PYTHONPATH" not in compose["environment"]
    from capsule.supervisor.core import Options, Supervisor

    agent_env = Supervisor(Options(role=role, command=["true"])).agent_env()
    assert agent_env["LD_PRELOAD"] == "/workspace/evil.so"      # the agent still gets what its role says


def test_a_root_owned_workspace_is_refused_with_the_fix_and_root_only_when_asked(tmp_path, capsys):
    ws = _workspace(tmp_path, 0)
    with pytest.raises(UserError) as exc:
        run_as(ws, None)
    assert "owned by root" in str(exc.value) and "chown" in str(exc.value) and "--user UID:GID" in str(exc.value)
    assert str(run_as(ws, "1000:1000")) == "1000:1000"
    assert str(run_as(ws, "0:0")) == "0:0"                         # the operator's explicit choice, said
    assert "runs as root" in capsys.readouterr().err
    got = subprocess.run([sys.executable, "-m", "capsule", "fleet", "render", "--role", "default", "--compose",
                          "--workspace", str(ws)], capture_output=True, text=True, timeout=60)
    assert got.returncode == 2 and "owned by root" in got.stderr and not got.stdout


def test_user_or_capsule_user_0_is_refused_over_a_workspace_someone_else_owns(tmp_path):
    ws = _workspace(tmp_path, 1000)
    with pytest.raises(UserError) as exc:
        run_as(ws, "0:0")
    assert "owned by 1000:1000" in str(exc.value) and "--user 1000:1000" in str(exc.value)
    got = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", "default", "--workspace", str(ws),
                          "--", "true"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "CAPSULE_USER": "0", "JACKIN_CTX_STATE_DIR": str(tmp_path / "state")})
    assert got.returncode == 2 and "owned by 1000:1000" in got.stderr, got.stderr


def test_the_supervisor_refuses_root_over_a_workspace_someone_else_owns(tmp_path):
    """$JACKIN_CTX_RUN_AS=0:0 from anywhere but `capsule up` (a hand-written compose file, docker run -e):
    the supervisor re-checks against the workspace's owner before it hands anything over."""
    from capsule.supervisor import identity

    assert os.geteuid() == 0, "the supervisor's id switch is root's (CI and the image run as root)"
    ws = _workspace(tmp_path, 1000)
    state = tmp_path / "state"
    with pytest.raises(SystemExit) as exc:
        identity.adopt("0:0", state, ws)
    assert exc.value.code == 2 and not state.exists()


def _confined(svc: dict) -> None:
    assert svc["cap_drop"] == ["ALL"] and svc["security_opt"] == ["no-new-privileges:true"]
    assert set(svc.get("cap_add", [])) <= set(CAPABILITIES)


def test_compose_replicas_are_confined_like_up_and_the_dsn_is_not_in_the_command(tmp_path):
    ws = _workspace(tmp_path, 501)
    doc = yaml.safe_load(render.compose_yaml(load_role("python-dev"), 2, "capsule:dev", ws, sync_image="s:1",
                                             user=run_as(ws, None)))
    for name, svc in doc["services"].items():
        _confined(svc)
        if name.startswith("fleet-sync-"):
            assert "--dsn" not in svc["command"] and "CAPSULE_FLEET_DSN" in svc["environment"]
            assert svc["read_only"] is True and "cap_add" not in svc
        else:
            assert svc["cap_add"] == list(CAPABILITIES)


def test_kubernetes_manifests_carry_a_security_context_and_the_dsn_only_as_a_secret_ref():
    docs = render.kubernetes(load_role("python-dev"), 2, "capsule:dev")
    for d in docs:
        kubernetes_validate.validate(d, "1.30", strict=True)
    pod = docs[-1]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["fsGroup"] == 1000
    for c in pod["containers"]:
        sc = c["securityContext"]
        assert sc["runAsNonRoot"] is True and sc["runAsUser"] != 0 and sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert not any("DSN" in a for a in c.get("args", [])), c.get("args")
    agent, sync = pod["containers"]
    assert sync["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "CAPSULE_FLEET_DSN", "valueFrom": {"secretKeyRef": {"name": render.DSN_SECRET, "key": "dsn"}}} \
        in sync["env"]
