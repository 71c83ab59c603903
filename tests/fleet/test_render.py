"""Scaled-out roles: Kubernetes manifests validated offline against the Kubernetes schemas
(kubernetes-validate), and `capsule up --replicas` on the real Docker engine: one state volume per
replica, each capsule's rows reach the fleet through `capsule fleet sync --docker`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import kubernetes_validate
import pytest
import sqlalchemy as sa
import yaml

from capsule.fleet import migrate, render, schema
from capsule.measure.ledger import Ledger
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


def test_compose_file_one_state_volume_per_replica_and_a_read_only_sync_job(tmp_path):
    from capsule.cli.runtime import compose_command

    out = tmp_path / "compose.yaml"
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 501, 20)                 # a macOS host user's workspace
    r = _run("fleet", "render", "--role", "python-dev", "--replicas", "3", "--compose", "--sync-image",
             "capsule-fleet:dev", "--workspace", str(ws), "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(out.read_text())
    agents = {k: v for k, v in doc["services"].items() if not k.startswith("fleet-sync-")}
    syncs = {k: v for k, v in doc["services"].items() if k.startswith("fleet-sync-")}
    assert sorted(agents) == ["python-dev-1", "python-dev-2", "python-dev-3"] and len(syncs) == 3
    # each replica's agent runs as the workspace owner, like `capsule up` (root starts, the supervisor drops)
    assert {(svc["user"], svc["environment"]["JACKIN_CTX_RUN_AS"]) for svc in agents.values()} == {("0:0", "501:20")}
    states = [next(v for v in svc["volumes"] if v.endswith(":/state/context")) for svc in agents.values()]
    assert len(set(states)) == 3 and all(s.split(":")[0] in doc["volumes"] for s in states)
    for name, svc in syncs.items():
        state = next(s for s in states if s.startswith(f"capsule-state-{name.removeprefix('fleet-sync-')}:"))
        assert svc["volumes"] == [f"{state.split(':')[0]}:/fleet/state:ro"]      # reads, never writes
        assert "docker.sock" not in out.read_text() and "postgresql://" not in out.read_text()
    check = subprocess.run([*compose_command("docker"), "-f", str(out), "config", "-q"], capture_output=True,
                           text=True, env={**os.environ, "CAPSULE_FLEET_DSN": "postgresql://fleet@db:5432/capsule"})
    assert check.returncode == 0, check.stderr
    unset = subprocess.run([*compose_command("docker"), "-f", str(out), "config", "-q"], capture_output=True,
                           text=True, env={k: v for k, v in os.environ.items() if k != "CAPSULE_FLEET_DSN"})
    assert unset.returncode != 0 and "fleet database DSN" in unset.stderr


def test_compose_file_user_override_and_a_missing_workspace(tmp_path):
    r = _run("fleet", "render", "--role", "python-dev", "--compose", "--workspace", str(tmp_path), "--user", "1234")
    assert r.returncode == 0, r.stderr
    svc = yaml.safe_load(r.stdout)["services"]["python-dev-1"]
    assert svc["environment"]["JACKIN_CTX_RUN_AS"] == "1234:1234" and svc["labels"]["capsule.user"] == "1234:1234"



def test_compose_keeps_a_dollar_in_the_command_and_env_as_written(tmp_path):
    """compose interpolates `$`: the agent's command and env must reach the container as typed,
    not read from the operator's environment (or refused as "Invalid interpolation format")."""
    from capsule.cli.runtime import compose_command

    out = tmp_path / "compose.yaml"
    out.write_text(render.compose_yaml(load_role("python-dev"), 1, "capsule:dev", tmp_path, {"PRICE": "cost $5"},
                                       ["sh", "-c", 'touch "made-by-$(hostname)" && echo $HOME ${HOME}']))
    got = subprocess.run([*compose_command("docker"), "-f", str(out), "config"], capture_output=True, text=True,
                         env={**os.environ, "HOME": "/operator"})
    assert got.returncode == 0, got.stderr
    svc = yaml.safe_load(got.stdout)["services"]["python-dev-1"]   # `config` prints a compose file: `$` re-doubled
    assert svc["command"] == ["--", "sh", "-c", 'touch "made-by-$$(hostname)" && echo $$HOME $${HOME}']
    assert svc["environment"]["PRICE"] == "cost $$5" and "/operator" not in got.stdout
    # (the container test `up --replicas` runs `$(hostname)` in each replica for real)
    bad = _run("fleet", "render", "--role", "python-dev", "--compose", "--workspace", str(tmp_path), "--user", "bob")
    assert bad.returncode == 2 and "expected UID or UID:GID" in bad.stderr
    gone = _run("fleet", "render", "--role", "python-dev", "--compose", "--workspace", str(tmp_path / "nope"))
    assert gone.returncode == 2 and "not a directory" in gone.stderr and not gone.stdout


def test_the_capsule_image_is_its_own_fleet_sync_sidecar(tmp_path, pg_dsn, state_dir):
    """The Kubernetes sidecar defaults to the agent's image: that image must carry capsule[fleet]
    and sync a state volume it mounts read-only into PostgreSQL."""
    r = subprocess.run([sys.executable, "-m", "capsule", "ctx", "run", "--", "seq", "1", "400"], capture_output=True,
                       env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}, timeout=120)
    assert r.returncode == 0, r.stderr
    Ledger(state_dir / "ledger.db").rows()          # its finisher has written the row
    sync = _docker("run", "--rm", "--network", "host", "--user", "0:0", "-v", f"{state_dir}:/fleet/state:ro",
                   "--entrypoint", "/opt/capsule/venv/bin/capsule", IMAGE, "fleet", "sync", "--dsn", pg_dsn,
                   "--state", "/fleet/state", "--container", "sidecar-1", "--role", "python-dev", check=False)
    assert sync.returncode == 0, sync.stderr
    eng = migrate.engine(pg_dsn)
    with eng.connect() as conn:
        n = conn.execute(sa.select(sa.func.count()).select_from(schema.emissions)
                         .join(schema.capsules).where(schema.capsules.c.container == "sidecar-1")).scalar()
    eng.dispose()
    assert n == 1


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
    os.chown(workspace, 501, 20)          # each replica's agent must write it as this owner
    try:
        r = _run("up", "--role", str(role_file), "--replicas", "2", "--workspace", str(workspace), "--image", IMAGE,
                 "--", "sh", "-c", 'touch "/workspace/made-by-$(hostname)" && exec sleep infinity',
                 env={"JACKIN_CTX_ACCOUNT": "team-a"}, timeout=600)
        assert r.returncode == 0, r.stderr
        names = r.stdout.split()
        assert names == [f"capsule-{name}-1", f"capsule-{name}-2"]
        deadline = time.monotonic() + 60
        while len(list(workspace.glob("made-by-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        made = list(workspace.glob("made-by-*"))
        assert len(made) == 2 and {(p.stat().st_uid, p.stat().st_gid) for p in made} == {(501, 20)}, made
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
    assert _docker("network", "ls", "-q", "--filter", f"label=capsule.role={name}").stdout.split() == []


def test_fleet_without_its_extra_says_what_to_install(tmp_path):
    """A capsule installed without capsule[fleet]: exit 2 and the pip line, not a traceback."""
    code = ("import sys; sys.modules['sqlalchemy'] = None\n"      # as if SQLAlchemy were not installed
            "from capsule.cli.main import main\n"
            f"sys.argv = ['capsule', 'fleet', 'sync', '--dsn', 'postgresql://x@127.0.0.1:1/x', '--state', {str(tmp_path)!r}]\n"
            "sys.exit(main())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "capsule fleet needs sqlalchemy" in r.stderr and "capsule[fleet]" in r.stderr, r.stderr
