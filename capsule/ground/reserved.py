"""Environment names capsule keeps for itself: who the agent runs as, where the supervisor writes.

Not responsible for refusing them (policy/manifest.py refuses a role that sets one; cli/runtime.py
an `up -e` that passes one) nor for the ids themselves (supervisor/identity.py). Data:
data/reserved_env.toml. Invariant: refused(name) is the one place that says which names a role or
an environment may not set; supervisor_env() never returns a loader variable from a role.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import tomllib

DATA = Path(__file__).parent / "data" / "reserved_env.toml"

# What a capsule container keeps of Docker's default capabilities (`up`, compose replicas): file
# ownership and signals, and the id switch the supervisor makes to the workspace owner (after it, a
# non-root agent has none). Dropped: NET_RAW, MKNOD, SYS_CHROOT, SETPCAP, SETFCAP, NET_BIND_SERVICE,
# AUDIT_WRITE.
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETUID", "SETGID")


@lru_cache(maxsize=1)
def _doc() -> dict:
    return tomllib.loads(DATA.read_text(encoding="utf-8"))


def refused(name: str) -> str | None:
    """Why `name` is capsule's to set, or None when a role or `-e` may set it."""
    return _doc()["refused"].get(name)


def agent_only(name: str) -> bool:
    """A loader/interpreter variable: the agent gets it from the supervisor, the supervisor never does."""
    spec = _doc()["agent_only"]
    return name not in spec["keep"] and name.startswith(tuple(spec["prefixes"]))


def supervisor_env(env: dict[str, str]) -> dict[str, str]:
    """A role's env as the container's own environment may carry it (the supervisor starts as root)."""
    return {k: v for k, v in env.items() if not agent_only(k)}
