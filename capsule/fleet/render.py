"""Scaled-out roles as files: compose (one service and one state volume per replica) and Kubernetes
(a StatefulSet whose volumeClaimTemplate gives each replica its own state, the role as a ConfigMap,
the fleet sync as a sidecar that mounts the state read-only).

Not responsible for running anything (`capsule up --replicas` runs the compose file) or for the
role's validation (the role arrives loaded). Invariants: pure (same role, same bytes); the same env
switches as `capsule up`'s docker run; no hostPath and nothing written on the host by a manifest.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from capsule.ground import paths, reserved, switches

ROLE_MOUNT = "/etc/capsule/role.toml"
LABEL = "capsule.managed"
STATE_VOLUME_PREFIX = "capsule-state-"
DSN_ENV = "CAPSULE_FLEET_DSN"         # `capsule fleet sync` reads the DSN from it (cli/fleet.py)
DSN_SECRET = "capsule-fleet-dsn"      # a Secret with key `dsn`: the sync sidecar's fleet database
SYNC_EVERY_S = 60


def slug(role) -> str:
    """A DNS-1123 label from the role name (Kubernetes object and compose service names)."""
    return re.sub(r"[^a-z0-9-]+", "-", role.name.lower()).strip("-")[:50] or "role"


def env_for(role, extra: dict[str, str] | None = None) -> dict[str, str]:
    """What `capsule up` passes: the role's agent env (its loader variables reach the agent through
    the supervisor only), the switches set here, the role path (capsule's names are capsule's)."""
    env = reserved.supervisor_env(role.agent.env)
    env.update({k: os.environ[k] for k in switches.ALL_SWITCHES if k in os.environ})
    env.update(extra or {})
    env = {k: v for k, v in env.items() if not reserved.refused(k)}
    env[switches.ROLE] = ROLE_MOUNT
    return env


# `capsule up`'s confinement: every capability dropped but reserved.CAPABILITIES, no new privileges.
CAPABILITIES = reserved.CAPABILITIES
CONFINED = {"cap_drop": ["ALL"], "security_opt": ["no-new-privileges:true"]}
K8S_AGENT_UID = 1000                    # the image's `agent` user (Dockerfile)


def literal(value: str) -> str:
    """A value compose must not interpolate: its `$` doubled (a command's `$(hostname)` or an env
    value's `$HOME` would otherwise be read from the operator's environment, or refused)."""
    return value.replace("$", "$$")


def replica_names(role, replicas: int) -> list[str]:
    return [f"{slug(role)}-{i}" for i in range(1, replicas + 1)]


def compose(role, replicas: int, image: str, workspace: Path, extra: dict[str, str] | None = None,
            argv: list[str] | None = None, sync_image: str | None = None, user=None) -> dict:
    """argv: the agent command (default: the role's own agent, the image's default). sync_image: add
    per replica a `fleet-sync-NAME` service of that image (one with capsule[fleet]) that mounts the
    replica's state read-only and syncs it every minute to $CAPSULE_FLEET_DSN (read from the
    operator's environment by compose: the DSN is never written into the file). user: the agent's
    uid:gid (the workspace owner, as `capsule up` runs one container): each replica starts as root
    and its supervisor drops to it (supervisor/identity.py)."""
    res = role.resources
    services, volumes = {}, {}
    for name in replica_names(role, replicas):
        volume = f"{STATE_VOLUME_PREFIX}{name}"
        svc = {"image": image, "container_name": f"capsule-{name}",
               "labels": {LABEL: "1", "capsule.role": role.name, "capsule.replica": name},
               "environment": {k: literal(v) for k, v in env_for(role, extra).items()},
               "volumes": [f"{volume}:{paths.CONTAINER_STATE_DIR}", literal(f"{role.path}:{ROLE_MOUNT}:ro"),
                           literal(f"{workspace}:{role.workspace_mount}{':ro' if role.workspace_read_only else ''}")],
               "working_dir": role.workspace_mount, "init": False, "stop_grace_period": "15s",
               **CONFINED, "cap_add": list(CAPABILITIES)}
        if user is not None:
            svc["user"] = "0:0"
            svc["environment"] = {**svc["environment"], switches.RUN_AS: str(user)}
            svc["labels"]["capsule.user"] = str(user)
        if argv:
            svc["command"] = ["--", *map(literal, argv)]
        if "cpus" in res:
            svc["cpus"] = float(res["cpus"])
        if "memory" in res:
            svc["mem_limit"] = str(res["memory"])
        if "pids" in res:
            svc["pids_limit"] = int(res["pids"])
        services[name] = svc
        volumes[volume] = {"name": volume, "labels": {LABEL: "1", "capsule.role": role.name}}
        if sync_image:
            # the DSN (its password) in the environment, never in the command line (/proc/PID/cmdline)
            services[f"fleet-sync-{name}"] = {
                "image": sync_image, "entrypoint": ["capsule"],
                "command": ["fleet", "sync", "--state", "/fleet/state", "--container", f"capsule-{name}",
                            "--role", role.name, "--every", str(SYNC_EVERY_S)],
                "environment": {DSN_ENV: "${CAPSULE_FLEET_DSN:?set the fleet database DSN}",
                                switches.ACCOUNT: (extra or {}).get(switches.ACCOUNT)
                                or os.environ.get(switches.ACCOUNT, "default")},
                "volumes": [f"{volume}:/fleet/state:ro"], "restart": "unless-stopped",
                **CONFINED, "read_only": True, "tmpfs": ["/tmp"]}
    network = {"name": f"capsule-{slug(role)}", "labels": {LABEL: "1", "capsule.role": role.name}}
    return {"services": services, "volumes": volumes, "networks": {"default": network}}


def compose_yaml(role, replicas: int, image: str, workspace: Path, extra: dict[str, str] | None = None,
                 argv: list[str] | None = None, sync_image: str | None = None, user=None) -> str:
    head = (f"# capsule role {role.name}: {replicas} replica(s), each with its own state volume.\n"
            f"# Written by `capsule fleet render --compose`; run by `capsule up --role {role.name} --replicas N`.\n")
    return head + yaml.safe_dump(compose(role, replicas, image, workspace, extra, argv, sync_image, user),
                                 sort_keys=False)


def _k8s_memory(value) -> str:
    """compose/docker '4g' -> Kubernetes '4Gi'."""
    m = re.fullmatch(r"(\d+)([kmgKMG])?[bB]?", str(value).strip())
    if not m:
        return str(value)
    return m.group(1) + {"k": "Ki", "m": "Mi", "g": "Gi", None: ""}[(m.group(2) or "").lower() or None]


def kubernetes(role, replicas: int, image: str, namespace: str | None = None,
               extra: dict[str, str] | None = None, sync_image: str | None = None) -> list[dict]:
    """sync_image: the sidecar's image, one with `capsule[fleet]` installed (default: `image`)."""
    name = f"capsule-{slug(role)}"
    labels = {"app.kubernetes.io/name": "capsule", "app.kubernetes.io/instance": name, "capsule.role": slug(role)}
    meta = {"name": name, "labels": labels, **({"namespace": namespace} if namespace else {})}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**meta, "name": f"{name}-role"},
              "data": {"role.toml": Path(role.path).read_text(encoding="utf-8")}}
    res = role.resources
    limits = {}
    if "cpus" in res:
        limits["cpu"] = str(res["cpus"])
    if "memory" in res:
        limits["memory"] = _k8s_memory(res["memory"])
    state = {"name": "state", "mountPath": str(paths.CONTAINER_STATE_DIR)}
    agent = {"name": "agent", "image": image,
             "env": [{"name": k, "value": v} for k, v in sorted(env_for(role, extra).items())],
             "workingDir": role.workspace_mount,
             "volumeMounts": [state, {"name": "role", "mountPath": ROLE_MOUNT, "subPath": "role.toml",
                                      "readOnly": True},
                              {"name": "workspace", "mountPath": role.workspace_mount}],
             "resources": {"limits": limits, "requests": dict(limits)},
             # non-root from the start (no supervisor drop: fsGroup gives the volumes to the agent);
             # the agent writes its home and /tmp, so its root filesystem stays writable
             "securityContext": {"runAsNonRoot": True, "runAsUser": K8S_AGENT_UID, "runAsGroup": K8S_AGENT_UID,
                                 "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                 "readOnlyRootFilesystem": False}}
    # The fleet side, not the engine (INV-10): reads the state volume read-only, writes to the fleet DSN.
    sync = {"name": "fleet-sync", "image": sync_image or image, "command": ["capsule"],
            "args": ["fleet", "sync", "--state", str(paths.CONTAINER_STATE_DIR),
                     "--container", "$(POD_NAMESPACE)/$(POD_NAME)", "--host", "$(NODE_NAME)", "--role", role.name,
                     "--every", str(SYNC_EVERY_S)],
             # the DSN from the Secret into the environment only: args are in /proc/PID/cmdline
             "env": [{"name": DSN_ENV, "valueFrom": {"secretKeyRef": {"name": DSN_SECRET, "key": "dsn"}}},
                     {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                     {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                     {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
             "volumeMounts": [{**state, "readOnly": True}],
             "resources": {"limits": {"cpu": "250m", "memory": "256Mi"}},
             "securityContext": {"runAsNonRoot": True, "runAsUser": K8S_AGENT_UID, "runAsGroup": K8S_AGENT_UID,
                                 "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                 "readOnlyRootFilesystem": True}}
    claim = {"metadata": {"name": "state"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}}
    workspace = {"metadata": {"name": "workspace"},
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
           "spec": {"serviceName": name, "replicas": replicas, "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels},
                                 "spec": {"containers": [agent, sync], "terminationGracePeriodSeconds": 15,
                                          "securityContext": {"runAsNonRoot": True, "fsGroup": K8S_AGENT_UID,
                                                              "seccompProfile": {"type": "RuntimeDefault"}},
                                          "volumes": [{"name": "role", "configMap": {"name": f"{name}-role"}}]}},
                    "volumeClaimTemplates": [claim, workspace]}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": meta,
               "spec": {"clusterIP": "None", "selector": labels}}
    return [config, service, sts]


def kubernetes_yaml(role, replicas: int, image: str, namespace: str | None = None,
                    extra: dict[str, str] | None = None, sync_image: str | None = None) -> str:
    head = (f"# capsule role {role.name}: a StatefulSet of {replicas}, one state volume per replica, the fleet\n"
            f"# sync as a sidecar. Needs a Secret {DSN_SECRET} with key `dsn` (postgresql://…).\n")
    return head + yaml.safe_dump_all(kubernetes(role, replicas, image, namespace, extra, sync_image), sort_keys=False)
