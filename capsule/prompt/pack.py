"""The register pack: the role's standing instructions (register, guards, guard lines, read-door
note, codebook legend) compiled from data/pack.toml, and the subagent report contract.

Not responsible for putting the text on a client's command line (agents/session.py takes it as
given) nor for counting it (prompt/budget.py). Invariant: the text is a pure function of the role's
[context.output] table, whether the read door is on, and the pinned codebook: no times, paths,
process ids or counts, so every call of every session of a role/version carries the same bytes.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

PACK_FILE = Path(__file__).with_name("data") / "pack.toml"
REGISTERS = ("off", "terse", "compact")
DEFAULT_REGISTER = "terse"
SEPARATOR = "\n\n"


@lru_cache(maxsize=1)
def data() -> dict:
    return tomllib.loads(PACK_FILE.read_text(encoding="utf-8"))


def settings(output: dict | None) -> tuple[str, bool, bool]:
    """(register, guard_lines, codebook) of a role's [context.output] table, with the defaults."""
    output = output or {}
    return (output.get("register", DEFAULT_REGISTER), bool(output.get("guard_lines", True)),
            bool(output.get("codebook", False)))


def parts(output: dict | None, *, read_door: bool = True, legend: str = "", register: bool = True) -> dict[str, str]:
    """Part name -> text, in the order they are sent; a part that is off is absent. `register`
    False (JACKIN_CTX_NO_REGISTER): no register, guards, guard lines or codebook; `read_door` False
    (JACKIN_CTX_NO_MCP): no note about the ctx_* tools."""
    name, guard_lines, _codebook = settings(output)
    pack = data()
    out: dict[str, str] = {}
    if register and name != "off":
        out["register"] = pack["register"][name]["text"]
        out["guards"] = pack["guards"]["text"]
    if register and guard_lines:
        out["guard lines"] = pack["guard_lines"]["text"]
    if read_door:
        out["read-door note"] = pack["read_door"]["text"]
    if register and legend:
        out["codebook"] = legend
    return out


def standing_text(output: dict | None, *, read_door: bool = True, legend: str = "", register: bool = True) -> str:
    """What the client gets as standing instructions; "" when every part is off."""
    return SEPARATOR.join(parts(output, read_door=read_door, legend=legend, register=register).values())


def report_contract() -> str:
    """The output contract of subagent reports (one place: route's subagent definitions use it)."""
    return data()["subagent_contract"]["text"]


def with_contract(prompt: str) -> str:
    """A subagent definition's prompt with the report contract after it; the task text itself is
    kept exactly as written (a task specification is never compressed). Idempotent."""
    contract = report_contract()
    if contract in prompt:
        return prompt
    return f"{prompt.rstrip()}{SEPARATOR}{contract}" if prompt.strip() else contract


def extend_definition(task_class: str, definition: dict) -> dict:
    """For route/subagents.EXTENSIONS: the same definition with the contract in its prompt."""
    return {**definition, "prompt": with_contract(definition.get("prompt", ""))}
