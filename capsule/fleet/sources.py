"""Where the fleet's rows come from: capsule state dirs, given as paths or found through Docker.

Each source is one state dir (a container's /state/context volume) with its tags: container, role,
host, account. Not responsible for reading rows (capsule.fleet.sync). Invariant: a source's id is
stable for the same state (an explicit container name; else host + volume name, or host + real
path), so a re-sync finds its cursors;
nothing here writes to a state dir or connects to a capsule (INV-10: the fleet side reads files).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from capsule.ground import paths
from capsule.ground import switches

ROLE_LABEL = "capsule.role"
ACCOUNT_LABEL = "capsule.account"
MANAGED_LABEL = "capsule.managed"
DEFAULT_ACCOUNT = "default"


class SourceError(Exception):
    """A source that cannot be read; the message names it and the fix."""


@dataclass(frozen=True)
class Source:
    capsule: str        # stable id (see the module header)
    state: Path
    container: str
    role: str
    host: str
    account: str
    where: str          # what the operator would recognise: the path or the docker volume

    def tags(self) -> dict:
        return {"capsule": self.capsule, "container": self.container, "role": self.role, "host": self.host,
                "account": self.account, "source": self.where}


def _id(host: str, where: str) -> str:
    return hashlib.sha256(f"{host}\0{where}".encode()).hexdigest()[:20]


def _container_name(state: Path) -> str:
    # /var/lib/docker/volumes/NAME/_data and …/NAME/context say more than "_data" or "context"
    parts = [p for p in state.parts if p not in ("/", "_data", "context", "state")]
    return parts[-1] if parts else str(state)


def from_dirs(dirs: list[str], *, container: str | None = None, role: str | None = None,
              host: str | None = None, account: str | None = None) -> list[Source]:
    host = host or socket.gethostname()
    out = []
    for d in dirs:
        state = Path(d).resolve()
        if not state.is_dir():
            raise SourceError(f"--state {d}: not a directory")
        # A capsule that has written nothing yet has neither ledger.db nor usage.db: the sync
        # registers it and reports it as skipped (sync.Report.skipped), so a typo still shows.
        named = bool(container) and len(dirs) == 1
        name = container if named else _container_name(state)
        # An explicit --container is the identity (a StatefulSet pod keeps its name and volume when it
        # moves to another node, and the same mount path is in every pod); else this host + path.
        ident = _id("container", name) if named else _id(host, str(state))
        out.append(Source(ident, state, name, role or "unknown", host,
                          account or os.environ.get(switches.ACCOUNT) or DEFAULT_ACCOUNT, str(state)))
    return out


def _env(config: dict) -> dict[str, str]:
    return dict(e.split("=", 1) for e in (config.get("Env") or []) if "=" in e)


def from_docker(host: str | None = None, docker: str | None = None) -> list[Source]:
    """Every capsule container (label capsule.managed=1) with a volume at /state/context."""
    docker = docker or shutil.which("docker")
    if docker is None:
        raise SourceError("--docker: docker not found on PATH")
    host = host or socket.gethostname()
    ids = subprocess.run([docker, "ps", "-a", "-q", "--filter", f"label={MANAGED_LABEL}=1"],
                         capture_output=True, text=True)
    if ids.returncode != 0:
        raise SourceError(f"--docker: `docker ps` failed: {ids.stderr.strip()[-300:]}")
    if not ids.stdout.split():
        return []
    info = subprocess.run([docker, "inspect", *ids.stdout.split()], capture_output=True, text=True)
    if info.returncode != 0:
        raise SourceError(f"--docker: `docker inspect` failed: {info.stderr.strip()[-300:]}")
    out = []
    for c in json.loads(info.stdout):
        mount = next((m for m in c.get("Mounts", []) if m.get("Destination") == str(paths.CONTAINER_STATE_DIR)), None)
        if mount is None or not mount.get("Source"):
            continue
        labels = (c.get("Config") or {}).get("Labels") or {}
        env = _env(c.get("Config") or {})
        where = f"volume:{mount['Name']}" if mount.get("Name") else mount["Source"]
        role = labels.get(ROLE_LABEL) or Path(env.get(switches.ROLE, "unknown")).stem
        out.append(Source(_id(host, where), Path(mount["Source"]), c["Name"].lstrip("/"), role, host,
                          labels.get(ACCOUNT_LABEL) or env.get(switches.ACCOUNT) or DEFAULT_ACCOUNT, where))
    return sorted(out, key=lambda s: s.container)
