"""Scaled-out roles: Kubernetes manifests validated offline against the Kubernetes schemas
(kubernetes-validate), and `capsule up --replicas` on the real Docker engine: one state volume per
replica, each capsule's rows reach the fleet through `capsule fleet sync --docker`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import kubernetes_validate
import pytest
import sqlalchemy as sa
import yaml

from capsule.fleet import migrate, render, schema
from capsule.policy.manifest import load_role

REPO = Path(__file__).resolve().parents[2]
K8S_VERSION = "1.30"
IMAGE = os.environ.get("CAPSULE_IMAGE", "capsule:dev")


def _run(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "capsule", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def test_kubernetes_manifests_validate_against_the_schemas(tmp_path):
    out = tmp_path / "k8s.yaml"
    r = _run("fleet", "render", "--role", "python-dev", "--replicas", "3", "--kubernetes", "-o", str(out),
             env={"JACKIN_CTX_MEASURE_ONLY": "1"})
    assert r.returncode == 0, r.stderr
    docs = list(yaml.safe_load_all(out.read_text()))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Service", "StatefulSet"]
    for d in docs:
        kubernetes_validate.validate(d, K8S_VERSION, strict=True)
    sts = docs[-1]
    role = load_role("python-dev")
    assert sts["spec"]["replicas"] == 3
    assert [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]][0] == "state"
    agent, sync = sts["spec"]["template"]["spec"]["containers"]
    assert agent["resources"]["limits"] == {"cpu": str(role.resources["cpus"]), "memory": "4Gi"}
    env = {e["name"]: e.get("value") for e in agent["env"]}
    assert env["JACKIN_CTX_MEASURE_ONLY"] == "1" and env["JACKIN_CTX_ROLE"] == render.ROLE_MOUNT
    assert {"name": "state", "mountPath": "/state/context", "readOnly": True} in sync["volumeMounts"]
    assert "hostPath" not in out.read_text()          # no host writes
    assert docs[0]["data"]["role.toml"] == role.path.read_text()


def test_the_validator_rejects_a_broken_manifest():
    sts = render.kubernetes(load_role("python-dev"), 2, IMAGE)[-1]
    sts["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sts, K8S_VERSION, strict=True)
    sts["spec"]["replicas"] = 2
    sts["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sts, K8S_VERSION, strict=True)


def _docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=300)


def test_compose_replicas_each_with_its_own_state_reach_the_fleet(tmp_path, pg_dsn, state_dir):
    name = f"fleet-wt{uuid.uuid4().hex[:6]}"
    role_file = tmp_path / f"{name}.toml"
    # A small role of its own (any image version knows these keys), named for this test only.
    role_file.write_text(f'schema = 1\nname = "{name}"\n[agent]\nkind = "claude"\n[resources]\ncpus = 1\n'
                         f'memory = "512m"\npids = 256\n[context]\nmode = "standard"\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    try:
        r = _run("up", "--role", str(role_file), "--replicas", "2", "--workspace", str(workspace), "--image", IMAGE,
                 "--", "sleep", "infinity", env={"JACKIN_CTX_ACCOUNT": "team-a"}, timeout=600)
        assert r.returncode == 0, r.stderr
        names = r.stdout.split()
        assert names == [f"capsule-{name}-1", f"capsule-{name}-2"]
        volumes = set()
        for i, c in enumerate(names):
            mounts = json.loads(_docker("inspect", "-f", "{{json .Mounts}}", c).stdout)
            state = [m["Name"] for m in mounts if m["Destination"] == "/state/context"]
            assert len(state) == 1
            volumes.add(state[0])
            for _ in range(i + 1):    # replica 1 writes one ledger row, replica 2 two
                rc = _docker("exec", c, "/opt/capsule/venv/bin/python", "-m", "capsule", "ctx", "run", "--",
                             "seq", "1", "400", check=False)
                assert rc.returncode == 0, rc.stderr
        assert len(volumes) == 2
        r = _run("fleet", "sync", "--dsn", pg_dsn, "--docker", "--json")
        assert r.returncode == 0, r.stderr
        eng = migrate.engine(pg_dsn)
        with eng.connect() as conn:
            caps = {row.container: row for row in conn.execute(sa.select(schema.capsules))}
            counts = dict(conn.execute(sa.select(schema.capsules.c.container, sa.func.count())
                                       .join(schema.emissions).group_by(schema.capsules.c.container)).all())
        eng.dispose()
        mine = {k: v for k, v in caps.items() if k in names}
        assert {v.role for v in mine.values()} == {name}
        assert {v.source for v in mine.values()} == {f"volume:{v}" for v in volumes}
        assert {k: counts.get(k) for k in names} == {names[0]: 1, names[1]: 2}
    finally:
        _run("down", name, "--volumes")
    left = _docker("ps", "-a", "-q", "--filter", f"label=capsule.role={name}").stdout.split()
    assert left == []
    assert _docker("volume", "ls", "-q", "--filter", f"label=capsule.role={name}").stdout.split() == []
