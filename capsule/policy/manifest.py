"""Role manifests: find, parse and validate a role TOML against its versioned JSON Schema.

Not responsible for acting on a role (the supervisor and `capsule up` do) nor for kill switches
(ground/switches.py). Invariant: a manifest with an unknown key or a bad value never yields a
Role; the error names the file, the key, its line and a hint.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capsule.ground import reserved
from capsule.store import memo

if TYPE_CHECKING:  # jsonschema costs ~60 ms to import; only validation needs it
    import jsonschema

DATA_DIR = Path(__file__).with_name("data")
ROLES_DIR = DATA_DIR / "roles"
SCHEMA_DIR = DATA_DIR / "role-schemas"
SCHEMA_VERSIONS = {1: "role.v1.schema.json"}
DEFAULT_ROLE = "default"
DEFAULT_MODE = "measure"            # new roles count everything and change nothing
DEFAULT_BUDGET = 1000          # standing-context tokens (INV-6); the shipped roles stay within it
AGENT_COMMANDS = {"claude": ("claude",), "codex": ("codex",), "opencode": ("opencode",), "gemini": ("gemini",),
                  "shell": ("bash",)}  # the clients of capsule/agents/data/clients (tests/agents check)


class ManifestError(ValueError):
    """A role manifest that cannot be used; str() is one line naming file, key, line and a hint."""


@dataclass(frozen=True)
class Agent:
    kind: str
    model: str | None
    command: tuple[str, ...]
    env: dict[str, str]
    statusline: bool = False      # claude: Claude Code's statusLine is `capsule statusline` for the session


@dataclass(frozen=True)
class Subsystems:
    shims: bool = True
    mcp: bool = True
    register: bool = True
    routing: bool = True
    proxy: bool = True


@dataclass(frozen=True)
class ContextConfig:
    mode: str = DEFAULT_MODE
    languages: tuple[str, ...] = ()
    standing_budget: int = DEFAULT_BUDGET
    subsystems: Subsystems = field(default_factory=Subsystems)
    output: dict[str, Any] = field(default_factory=dict)
    routing: dict[str, Any] = field(default_factory=dict)
    filters_extra: tuple[dict[str, str], ...] = ()
    media: dict[str, Any] = field(default_factory=dict)     # [context.media]; capsule/policy/media_policy.py reads it


@dataclass(frozen=True)
class Role:
    name: str
    path: Path
    description: str
    agent: Agent
    workspace_mount: str
    workspace_read_only: bool
    resources: dict[str, Any]
    context: ContextConfig
    raw: dict[str, Any]


def role_names() -> list[str]:
    return sorted(p.stem for p in ROLES_DIR.glob("*.toml"))


def resolve(name_or_path: str | Path) -> Path:
    """A path to a TOML file, or a role name looked up in the shipped roles/."""
    text = str(name_or_path)
    candidate = Path(text).expanduser()
    if text.endswith(".toml") or "/" in text or candidate.is_file():
        if not candidate.is_file():
            raise ManifestError(f"role {text}: no such file")
        return candidate
    path = ROLES_DIR / f"{text}.toml"
    if not path.is_file():
        raise ManifestError(f"role {text!r}: no such role; known roles: {', '.join(role_names())} "
                            "(or pass a path to a .toml file)")
    return path


def load_role(name_or_path: str | Path) -> Role:
    path = resolve(name_or_path)
    source = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"role {path}: not valid TOML: {exc}") from None
    validate(data, path, source)
    _refuse_reserved(data, path, source)
    return _build(data, path)


def _refuse_reserved(data: dict[str, Any], path: Path, source: str) -> None:
    """A role may not say who the agent runs as, nor where the supervisor (root at its start) writes:
    `[agent] env` setting JACKIN_CTX_RUN_AS = "0:0" would run the agent as root (issue 31)."""
    for name in (data.get("agent", {}).get("env") or {}):
        why = reserved.refused(name)
        if why:
            line = line_of(source, ("agent", "env", name))
            raise ManifestError(f"role {path} line {line}: [agent] env may not set {name}: {why}; "
                                f"hint: remove {name} from the role")


def validate(data: dict[str, Any], path: Path, source: str) -> None:
    version = data.get("schema")
    if version not in SCHEMA_VERSIONS:
        line = line_of(source, ("schema",))
        raise ManifestError(f"role {path} line {line}: key \"schema\" is {version!r}; "
                            f"hint: set schema = {max(SCHEMA_VERSIONS)} (known: {sorted(SCHEMA_VERSIONS)})")
    _finite(data, (), path, source)
    # jsonschema costs ~100 ms to import: a role whose exact bytes already passed this exact
    # schema is known valid. Failures are never memoized, so their message is always fresh.
    schema_file = SCHEMA_DIR / SCHEMA_VERSIONS[version]
    k = memo.key(schema_file.read_bytes(), source)
    if memo.get("role-valid", k):
        return
    error = _first_error(data, path, source, version)
    if error:
        raise ManifestError(error)
    memo.put("role-valid", k, True)


def _first_error(data: dict[str, Any], path: Path, source: str, version: int) -> str | None:
    import jsonschema  # noqa: PLC0415 - bench_startup "capsule --help"

    validator = jsonschema.Draft202012Validator(_schema(version))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        return _describe(errors[0], path, source)
    return _client_error(data, path, source)


def _client_error(data: dict[str, Any], path: Path, source: str) -> str | None:
    """Keys the schema allows that only some clients can honour."""
    kind = (data.get("agent") or {}).get("kind", "claude")
    if ((data.get("context") or {}).get("routing") or {}).get("advisor") and kind != "claude":
        line = line_of(source, ("context", "routing", "advisor"))
        return (f"role {path} line {line}: \"context.routing.advisor\" needs Claude Code's session-scoped subagent "
                f"pins, and agent.kind is {kind!r}; hint: remove advisor (a plan lane model does the same for a plan)")
    return None


def _finite(node: Any, keys: tuple[str, ...], path: Path, source: str) -> None:
    """TOML has nan and inf literals, and JSON Schema's bounds let them through (nan compares false
    with everything): no role value may be one ("degrade at nan%")."""
    if isinstance(node, float) and not math.isfinite(node):
        dotted = ".".join(keys) or "(top level)"
        raise ManifestError(f"role {path} line {line_of(source, keys)}: bad value for \"{dotted}\": {node!r}; "
                            "hint: a finite number (TOML's nan and inf are not accepted)")
    if isinstance(node, dict):
        for k, v in node.items():
            _finite(v, keys + (str(k),), path, source)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _finite(v, keys + (str(i),), path, source)


@lru_cache(maxsize=None)
def _schema(version: int) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / SCHEMA_VERSIONS[version]).read_text(encoding="utf-8"))


def _describe(err: jsonschema.ValidationError, path: Path, source: str) -> str:
    keys = tuple(str(k) for k in err.absolute_path)
    table = "[" + ".".join(keys) + "]" if keys else "the top level"
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        unknown = sorted(set(err.instance) - set(allowed))
        bad = unknown[0] if unknown else "?"
        line = line_of(source, keys + (bad,))
        return (f"role {path} line {line}: unknown key \"{bad}\" in {table}; "
                f"allowed: {', '.join(allowed)}")
    if err.validator == "required":
        missing = re.findall(r"'([^']+)' is a required property", err.message)
        name = missing[0] if missing else "?"
        line = line_of(source, keys) if keys else 1
        return f"role {path} line {line}: missing key \"{name}\" in {table}; hint: add {name} = …"
    line = line_of(source, keys)
    dotted = ".".join(keys) or "(top level)"
    hint = _hint(err, schema)
    return f"role {path} line {line}: bad value for \"{dotted}\": {err.instance!r}; hint: {hint}"


def _hint(err: jsonschema.ValidationError, schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return f"must be {schema['const']!r}"
    if "type" in schema and err.validator == "type":
        return f"expected {schema['type']}"
    if "pattern" in schema:
        return f"must match {schema['pattern']}"
    return err.message


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\"'-]+)\s*=")


def line_of(source: str, keys: tuple[str, ...]) -> int:
    """Line of the longest prefix of `keys` that the file spells (`key =` or a [table]); else 1."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(source.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = tuple(_unquote(p) for p in header.group(1).split("."))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            full = table + tuple(_unquote(p) for p in key.group(1).split("."))
            for i in range(len(table) + 1, len(full) + 1):
                lines.setdefault(full[:i], number)
    for i in range(len(keys), 0, -1):
        if keys[:i] in lines:
            return lines[keys[:i]]
    return 1


def _unquote(part: str) -> str:
    return part.strip().strip("\"'")


def _build(data: dict[str, Any], path: Path) -> Role:
    agent = data["agent"]
    ctx = data.get("context", {})
    kind = agent["kind"]
    workspace = data.get("workspace", {})
    return Role(
        name=data["name"],
        path=path.resolve(),
        description=data.get("description", ""),
        agent=Agent(kind=kind, model=agent.get("model"),
                    command=tuple(agent.get("command", AGENT_COMMANDS[kind])),
                    env=dict(agent.get("env", {})), statusline=bool(agent.get("statusline", False))),
        workspace_mount=workspace.get("mount", "/workspace"),
        workspace_read_only=bool(workspace.get("read_only", False)),
        resources=dict(data.get("resources", {})),
        context=ContextConfig(
            mode=ctx.get("mode", DEFAULT_MODE),
            languages=tuple(ctx.get("languages", ())),
            standing_budget=int(ctx.get("standing_budget", DEFAULT_BUDGET)),
            subsystems=Subsystems(**ctx.get("subsystems", {})),
            output=dict(ctx.get("output", {})),
            routing=dict(ctx.get("routing", {})),
            filters_extra=tuple(dict(f) for f in ctx.get("filters", {}).get("extra", ())),
            media=dict(ctx.get("media", {})),
        ),
        raw=data,
    )
