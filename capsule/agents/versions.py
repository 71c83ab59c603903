"""Which client versions capsule is tested with (data/client_versions.toml), and whether an
installed client is inside that range.

Not responsible for finding the installed version (agents.client_info does) nor for installing
clients (scripts/setup-clients.sh). Invariant: an unknown client or an unreadable version is never
called outside the range: only a version capsule can read and compare is warned about.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("data") / "client_versions.toml"


@lru_cache(maxsize=1)
def data() -> dict:
    with open(DATA, "rb") as fh:
        return tomllib.load(fh)


def parse(version: str | None) -> tuple[int, ...] | None:
    """`2.1.332`, `2.1.332 (Claude Code)` or `codex-cli 0.171.0` -> (2, 1, 332); None when unreadable."""
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", version or "")
    return tuple(int(g) for g in m.groups()) if m else None


def tested(client: str) -> tuple[str, str] | None:
    spec = data().get(client)
    return (spec["oldest"], spec["newest"]) if spec else None


def outside(client: str, version: str | None) -> str | None:
    """One line when `version` of `client` is outside its tested range; None when inside or unknown."""
    rng, have = tested(client), parse(version)
    if rng is None or have is None:
        return None
    low, high = parse(rng[0]), parse(rng[1])
    if low <= have <= high:
        return None
    side = "older than" if have < low else "newer than"
    return (f"{client} {'.'.join(map(str, have))} is {side} the versions capsule is tested with "
            f"({rng[0]} to {rng[1]}); it may work, but nothing checked it (npm install -g "
            f"{data()[client]['package']}@{rng[1]})")
