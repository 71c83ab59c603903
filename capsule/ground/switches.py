"""Kill switches and capsule's environment variables: the one place they are named and read.

Not responsible for deciding what a subsystem does when off; each subsystem asks here.
Invariant: a switch is on when its variable is set to anything but "", "0", "false", "no", "off".
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Mapping

DISABLE = "JACKIN_CTX_DISABLE"
NO_SHIMS = "JACKIN_CTX_NO_SHIMS"
NO_MCP = "JACKIN_CTX_NO_MCP"
NO_REGISTER = "JACKIN_CTX_NO_REGISTER"
NO_ROUTING = "JACKIN_CTX_NO_ROUTING"
MEASURE_ONLY = "JACKIN_CTX_MEASURE_ONLY"
NO_PROXY = "JACKIN_CTX_NO_PROXY"

ALL_SWITCHES = (DISABLE, NO_SHIMS, NO_MCP, NO_REGISTER, NO_ROUTING, MEASURE_ONLY, NO_PROXY)

# Non-switch settings.
STATE_DIR = "JACKIN_CTX_STATE_DIR"
SOCKET = "JACKIN_CTX_SOCKET"
RETENTION = "JACKIN_CTX_RETENTION_SECONDS"
SCOPE = "JACKIN_CTX_SCOPE"
MODE = "JACKIN_CTX_MODE"
ROLE = "JACKIN_CTX_ROLE"
ACCOUNT = "JACKIN_CTX_ACCOUNT"  # the operator's name for the account a capsule bills: a fleet tag only
AGENT_MARKER = "JACKIN_CTX_AGENT"
AGENT_MODEL = "JACKIN_CTX_AGENT_MODEL"  # the agent client's model, set by the supervisor (output caps)
# "KEY DEV:INO DEV:INO": the files (stdout, stderr) the agent's current tool call reads, recorded
# when the call's shell starts; a shim transforms only output written to exactly those.
AGENT_OUT = "JACKIN_CTX_AGENT_OUT"
CHAIN_ENV = "JACKIN_CTX_CHAIN_ENV"  # the user's own CLAUDE_ENV_FILE / BASH_ENV, sourced by ours first
STREAM_AFTER = "JACKIN_CTX_STREAM_AFTER"  # seconds a call's output is held before it streams raw
STREAM_AFTER_S = 20.0      # its default: a dev server or a long build never looks dead (shims, ctx run)
IN_SHIM = "JACKIN_CTX_IN_SHIM"  # set for the real command a shim runs: nested shims pass through
FAULT_INJECT = "JACKIN_CTX_FAULT_INJECT"  # test-only: name of a transform forced to raise
NO_REDACT = "JACKIN_CTX_NO_REDACT"  # keep secrets verbatim in what capsule stores (redacted by default)
PROXY_MAX_REQUEST = "JACKIN_CTX_PROXY_MAX_REQUEST_BYTES"  # the proxy's request byte cap (default: apis.toml)
USAGE_INTERVAL = "JACKIN_CTX_USAGE_INTERVAL"  # seconds between the supervisor's transcript ingestion passes
NO_STAGGER = "JACKIN_CTX_NO_STAGGER"  # the proxy holds no same-prefix request (capsule/route/stagger.py)
RUN_AS = "JACKIN_CTX_RUN_AS"  # UID:GID the container's supervisor drops to (`capsule up`: the workspace owner)
USER_OVERRIDE = "CAPSULE_USER"  # `capsule up --user`'s default: UID[:GID] instead of the workspace owner
NO_DAEMON = "JACKIN_CTX_NO_DAEMON"  # `ctx run` uses its in-process engine, never the engine daemon
DAEMON_IDLE = "JACKIN_CTX_DAEMON_IDLE"  # seconds the engine daemon of `ctx run` lives without a request
DAEMON_IDLE_S = 900.0      # its default (build-tool daemons keep hours; this one holds ~100 MB)
# Read per call by the door, never by the engine: a daemon serves runs whatever these say (every
# other JACKIN_CTX_ variable picks the daemon: cli/warm.py, paths.daemon_socket).
PER_CALL = (AGENT_OUT, IN_SHIM, STREAM_AFTER, SCOPE, CHAIN_ENV, NO_DAEMON, SOCKET)

_FALSE = {"", "0", "false", "no", "off"}


def is_on(name: str, env: Mapping[str, str] | None = None) -> bool:
    value = (env if env is not None else os.environ).get(name, "")
    return value.strip().lower() not in _FALSE


# A named tuple (immutable, like every value read here): the engine reads the switches on every
# observation, and a cold `ctx run` imports this module first; a dataclass would make it import
# dataclasses (~7 ms) for one record of seven flags.
class Switches(namedtuple("Switches", ("disable", "no_shims", "no_mcp", "no_register", "no_routing", "measure_only",
                                       "no_proxy"), defaults=(False,))):
    __slots__ = ()

    @classmethod
    def read(cls, env: Mapping[str, str] | None = None) -> "Switches":
        return cls(
            disable=is_on(DISABLE, env),
            no_shims=is_on(NO_SHIMS, env),
            no_mcp=is_on(NO_MCP, env),
            no_register=is_on(NO_REGISTER, env),
            no_routing=is_on(NO_ROUTING, env),
            measure_only=is_on(MEASURE_ONLY, env),
            no_proxy=is_on(NO_PROXY, env),
        )

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, attr) for name, attr in zip(ALL_SWITCHES, (
            "disable", "no_shims", "no_mcp", "no_register", "no_routing", "measure_only", "no_proxy"))}


def daemon_idle(env: Mapping[str, str] | None = None) -> float:
    """Seconds the engine daemon waits for a request before it exits."""
    raw = (os.environ if env is None else env).get(DAEMON_IDLE)
    try:
        value = float(raw) if raw else DAEMON_IDLE_S
    except ValueError:
        return DAEMON_IDLE_S
    return value if 0 < value < 1e7 else DAEMON_IDLE_S


def stream_after(env: Mapping[str, str] | None = None) -> float:
    """Seconds `ctx run` and the shims hold a still-running command's output before streaming the
    rest raw; 0 (or less) holds until it exits. (The shim template parses the same way: it imports
    nothing of capsule.)"""
    raw = (os.environ if env is None else env).get(STREAM_AFTER)
    try:
        return float(raw) if raw else STREAM_AFTER_S
    except ValueError:
        return STREAM_AFTER_S
