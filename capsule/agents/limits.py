"""Each agent client's own output cap, and which client an observation came from.

Not responsible for shaping the output (capsule/observe/fit.py) nor for the numbers themselves
(data/client_limits.toml, checked against the real clients by tests/e2e/test_client_limits.py).
Invariant: an unknown client (no marker in the observation's environment) has no cap: nothing is
shaped for a limit capsule cannot name.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from capsule.ground import switches
from capsule.ground.types import Limit

DATA = Path(__file__).with_name("data") / "client_limits.toml"


@lru_cache(maxsize=1)
def data() -> dict:
    with open(DATA, "rb") as fh:
        return tomllib.load(fh)


def env_names() -> tuple[str, ...]:
    """The environment entries a shim forwards with each observation (this module and intent.py read them)."""
    names = [switches.AGENT_MODEL]
    for client in ("claude", "codex"):
        spec = data()[client]
        names += [spec["detect_env"]] + [spec[k] for k in ("cap_env", "session_env") if k in spec]
    return tuple(dict.fromkeys(names))


def detect(env: Mapping[str, str] | None) -> Limit | None:
    """The client behind an observation, from the environment its command ran in."""
    if not env:
        return None
    claude, codex = data()["claude"], data()["codex"]
    if env.get(claude["detect_env"]) == "1":
        cap = int(claude["cap"])
        override = env.get(claude["cap_env"], "").strip()
        if override.isdigit() and int(override) > 0:
            cap = int(override)
        return _limit("claude", env.get(switches.AGENT_MODEL) or None, claude["unit"], cap)
    if env.get(codex["detect_env"]):
        model = env.get(switches.AGENT_MODEL) or codex["default_model"]
        cap = int(codex["cap"]) if model in codex["catalog"] else int(codex["unknown_model_cap"])
        return _limit("codex", model, codex["unit"], cap)
    return None


def _limit(client: str, model: str | None, unit: str, cap: int) -> Limit:
    shape = data()["shape"]
    return Limit(client, model, unit, cap, margin=float(shape["margin"]), context=int(shape["context"]),
                 head=int(shape["head"]), tail=int(shape["tail"]), line_chars=int(shape["line_chars"]))


def parse_meta(blob: bytes) -> dict[str, str]:
    """The shim's `NAME=VALUE` lines (only names in env_names() are kept)."""
    wanted = set(env_names())
    out = {}
    for line in blob.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition("=")
        if sep and name in wanted:
            out[name] = value
    return out
