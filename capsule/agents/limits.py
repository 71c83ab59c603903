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

from capsule.agents import clients
from capsule.ground import switches
from capsule.ground.types import Limit

DATA = Path(__file__).with_name("data") / "client_limits.toml"


@lru_cache(maxsize=1)
def data() -> dict:
    with open(DATA, "rb") as fh:
        return tomllib.load(fh)


def env_names() -> tuple[str, ...]:
    """The environment entries a shim forwards with each observation (this module and intent.py read them)."""
    names = [switches.AGENT_MARKER, switches.AGENT_MODEL]
    for client in clients.all_clients().values():
        spec = data().get(client.name, {})
        names += [client.tool_env] + [spec[k] for k in ("cap_env", "session_env") if k in spec]
    return tuple(dict.fromkeys(names))


def detect(env: Mapping[str, str] | None) -> Limit | None:
    """The client behind an observation, from the environment its command ran in."""
    if not env:
        return None
    # capsule's marker names the client it launched; without it (a client capsule did not launch)
    # its tool mark is the hint.
    client = clients.get(env.get(switches.AGENT_MARKER, "")) or clients.hinted(env)
    name = client.name if client else None
    claude, codex = data()["claude"], data()["codex"]
    if name == "claude":
        cap = int(claude["cap"])
        override = env.get(claude["cap_env"], "").strip()
        if override.isdigit() and int(override) > 0:
            cap = int(override)
        return _limit("claude", env.get(switches.AGENT_MODEL) or None, claude["unit"], cap)
    if name == "codex":
        model = env.get(switches.AGENT_MODEL) or codex["default_model"]
        cap = int(codex["cap"]) if model in codex["catalog"] else int(codex["unknown_model_cap"])
        return _limit("codex", model, codex["unit"], cap)
    spec = data().get(name or "")
    if spec and "cap" in spec:           # a client with one fixed cap (gemini)
        return _limit(name, env.get(switches.AGENT_MODEL) or None, spec["unit"], int(spec["cap"]))
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
