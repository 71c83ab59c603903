"""The agent clients capsule drives, as data: one description per client (data/clients/<name>.toml).

A description says how capsule launches the client for one session, how its tool children are
recognised, where its transcripts are and which reader counts them, which doors it has (shims,
hooks, MCP, proxy) and the version range the real-client e2e ran on. A new client is its data
file plus its module (capsule/agents/<name>.py: the session-scoped launch).
Not responsible for launching (capsule/supervisor), for the doors themselves, nor for reading
transcripts (capsule/measure/transcripts, keyed by `reader`).

The identity rule (INV: programs, pipes and the client's own calls get raw bytes): a call is an
agent tool call when capsule's marker (switches.AGENT_MARKER, set in the env of the agent capsule
launched, inherited by everything it starts) names a client AND the client's tool mark holds
(`identity.tool_env`, a variable only its tool children carry). Vendor variables are hints.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

DATA_DIR = Path(__file__).with_name("data") / "clients"
SHELL = "shell"          # the marker's value for a shell agent: every command is a tool call
DOORS = ("shims", "hooks", "mcp", "proxy")


@dataclass(frozen=True)
class Client:
    name: str                    # claude, codex, opencode, gemini: the role's agent kind
    title: str
    command: str                 # its binary's name
    package: str                 # its npm package
    tested: tuple[str, str]      # oldest and newest version the real-client e2e ran on
    api: str                     # the model API it speaks: anthropic | openai | gemini
    session: str                 # how capsule configures one session (for doctor)
    env_file: str                # the variable naming a file its tool shell sources
    base_url_env: str            # the variable that moves its model API ("" when a config does)
    tool_env: str                # the tool mark: a variable only its tool children carry
    tool_value: str              # its required value ("": any non-empty value)
    hints: tuple[str, ...]       # vendor variables: which client, never whether a tool call
    transcripts: str             # where its sessions are kept (for doctor)
    reader: str                  # capsule/measure/transcripts/<reader>.py
    doors: dict[str, str]        # door -> how it is wired (only the doors the client has)

    def is_tool_call(self, env: Mapping[str, str]) -> bool:
        value = env.get(self.tool_env, "")
        return value == self.tool_value if self.tool_value else bool(value)


def _load(path: Path) -> Client:
    with open(path, "rb") as fh:
        d = tomllib.load(fh)
    launch, ident, tr = d["launch"], d["identity"], d["transcripts"]
    doors = {k: str(v) for k, v in d.get("doors", {}).items()}
    unknown = set(doors) - set(DOORS)
    if unknown:
        raise ValueError(f"{path}: unknown door(s) {sorted(unknown)}; known: {', '.join(DOORS)}")
    return Client(name=path.stem, title=d["title"], command=d["command"], package=d["package"],
                  tested=(str(d["tested"][0]), str(d["tested"][1])), api=d["api"],
                  session=launch["session"], env_file=launch.get("env_file", ""),
                  base_url_env=launch.get("base_url_env", ""), tool_env=ident["tool_env"],
                  tool_value=ident.get("tool_value", ""), hints=tuple(ident.get("hints", ())),
                  transcripts=tr["where"], reader=tr["reader"], doors=doors)


@lru_cache(maxsize=1)
def all_clients() -> dict[str, Client]:
    """Every described client, by name, in name order (deterministic)."""
    return {p.stem: _load(p) for p in sorted(DATA_DIR.glob("*.toml"))}


def names() -> tuple[str, ...]:
    return tuple(all_clients())


def get(name: str) -> Client | None:
    return all_clients().get(name)


def by_command(argv0: str) -> Client | None:
    """The client whose binary `argv0` is (a path or a bare name)."""
    base = Path(argv0).name
    return next((c for c in all_clients().values() if c.command == base), None)


def kind_of(command: list[str] | tuple[str, ...] | None, default: str) -> str:
    """The agent kind of a launch command: the client it names, else a shell agent; `default`
    (the role's kind) when there is no command."""
    if not command:
        return default
    client = by_command(command[0])
    return client.name if client else SHELL


def marked(env: Mapping[str, str], marker: str) -> Client | None:
    """The client capsule launched, when this environment is a tool child of it; else None."""
    client = get(env.get(marker, ""))
    return client if client is not None and client.is_tool_call(env) else None


def hinted(env: Mapping[str, str]) -> Client | None:
    """The client a vendor variable hints at (no marker: a client capsule did not launch)."""
    return next((c for c in all_clients().values() if c.is_tool_call(env) and c.tool_env in c.hints), None)


def version_status(client: Client, version: str | None) -> str | None:
    """None when `version` is inside the tested range, else why not (doctor's warning)."""
    if not version:
        return "version unknown"
    try:
        v = _key(version)
        lo, hi = _key(client.tested[0]), _key(client.tested[1])
    except ValueError:
        return f"version {version!r} is not a release number"
    if v < lo:
        return f"older than the oldest tested ({client.tested[0]})"
    if v > hi:
        return f"newer than the newest tested ({client.tested[1]})"
    return None


def _key(version: str) -> tuple[int, ...]:
    head = version.strip().split()[0].split("-")[0]
    return tuple(int(p) for p in head.split("."))
