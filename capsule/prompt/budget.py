"""The standing-context budget (INV-6): what capsule adds to every request, as the client sends it.

Per part: the read door's tools in the client's own wrapping, the tools the client adds because a
server is registered, the server instructions under the client's header, and the role's standing
text (register, guards, guard lines, note, codebook) and subagent report contract. Counted per model
family: the family's tokenizer when one is available, else cl100k_base plus a stated margin.
Not responsible for writing any of it (prompt/pack.py, mcp/, agents/). Invariant: a part that cannot
be measured is listed with 0 tokens and its reason, never hidden; the figures are checked against
captured requests of the real clients (tests/prompt/test_standing_real_clients.py).
"""

from __future__ import annotations

import json
import math
import tomllib
from functools import lru_cache
from pathlib import Path

from capsule.policy import plan as planning
from capsule.prompt import pack, surface as read_door
from capsule.ground import tokens
from capsule.store import memo

DATA = Path(__file__).with_name("data")
SERVER = "capsule"
CLIENT_FAMILY = {"claude": "anthropic", "codex": "openai"}
IDENTITY = "client's identity line"       # counted as the longer line minus the one it replaces


@lru_cache(maxsize=1)
def families() -> dict:
    return tomllib.loads((DATA / "families.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def clients() -> dict:
    return tomllib.loads((DATA / "clients.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def client_tools() -> dict:
    return json.loads((DATA / "client_tools.json").read_text(encoding="utf-8"))


def compact(obj) -> str:
    """JSON as the clients put it on the wire (no spaces, Unicode kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# -- what each client sends --------------------------------------------------------------------------
def wrapped_tools(client: str, surface: dict) -> list[dict]:
    """The read door's tools as `client` sends them to the model."""
    form = clients()[client]["tool_form"]
    if form == "anthropic":
        return [{"name": f"mcp__{SERVER}__{t['name']}", "description": t["description"],
                 "input_schema": t["input_schema"]} for t in sorted(surface["tools"], key=lambda t: t["name"])]
    if form == "namespace":
        def params(schema: dict) -> dict:
            out = {"type": "object", "properties": {k: {"type": v["type"]} for k, v in sorted(schema["properties"].items())}}
            if schema.get("required"):
                out["required"] = list(schema["required"])
            return out
        return [{"type": "namespace", "name": f"mcp__{SERVER}", "description": surface["instructions"],
                 "tools": [{"type": "function", "name": t["name"], "description": t["description"], "strict": False,
                            "parameters": params(t["input_schema"])} for t in sorted(surface["tools"], key=lambda t: t["name"])]}]
    raise ValueError(f"clients.toml: unknown tool_form {form!r} for {client}")


def added_tools(client: str, surface: dict) -> list[dict]:
    """Tools the client adds of its own because capsule's server is registered."""
    when = clients()[client]["resource_tools_when"]
    if when == "any" or (when == "resources" and "resources" in surface.get("capabilities", ())):
        return list(client_tools()[client]["resource_tools"])
    return []


def instructions_text(client: str, surface: dict) -> str:
    """The server instructions as a separate text in the request ("" when inside the tools or none)."""
    header = clients()[client].get("instructions_header")
    if not surface.get("instructions") or not header:
        return ""
    return header.format(server=SERVER) + surface["instructions"] + clients()[client].get("instructions_footer", "")


def texts(client: str, role, subsystems: dict, surface: dict | None = None) -> dict[str, str]:
    """Part name -> the exact text `client` carries for it on every call of a session of `role`."""
    out: dict[str, str] = {}
    mcp_on = subsystems["mcp"].on
    if mcp_on:
        if surface is None:
            surface = read_door.load()
        out["mcp tools"] = compact(wrapped_tools(client, surface))
        added = added_tools(client, surface)
        if added:
            out["client's MCP resource tools"] = compact(added)
        instr = instructions_text(client, surface)
        if instr:
            out["mcp instructions"] = instr
    register_on = subsystems["register"].on
    if register_on or mcp_on:   # the read-door note is MCP's part, the rest the register's
        output = dict(role.context.output) if role is not None else {}
        body = pack.parts(output, read_door=mcp_on, legend=legend_for(role) if register_on else "",
                          register=register_on)
        identity = clients()[client].get("append_identity")
        if body and identity:
            out[IDENTITY] = identity[1]
        out.update(body)
        if client == "claude" and register_on:   # in the prompt of each subagent capsule defines
            out["subagent contract"] = pack.report_contract()
    return out


def legend_for(role) -> str:
    if role is None or not pack.settings(role.context.output)[2]:
        return ""
    try:
        from capsule.prompt import codebook  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

        return codebook.legend(role)
    except Exception:  # noqa: BLE001 - no codebook is a smaller context, never a failure
        return ""


# -- counting ----------------------------------------------------------------------------------------
def _count_cl100k(text: str, labels: set[str]) -> int:
    """cl100k count of a fixed text, memoized by content (loading the tokenizer costs ~60 ms)."""
    k = memo.key(tokens.ENCODING, text)
    n = memo.get("tokens", k)
    if isinstance(n, int):
        return n
    n = tokens.count(text)
    labels.add(tokens.label())
    if tokens.label() == tokens.LABEL_EXACT:
        memo.put("tokens", k, n)
    return n


@lru_cache(maxsize=1)
def _o200k():
    import bpe_openai  # noqa: PLC0415 - bench_startup "capsule ctx doctor": ~0.4 s, memoized counts skip it

    return bpe_openai.get_encoding("o200k_base")


def counter(family: str):
    """(count(text) -> int, label) for `family`; the label says exact tokenizer or margin used."""
    spec = families()[family]
    labels: set[str] = set()
    if spec.get("exact") and spec["tokenizer"] == "o200k_base":
        try:
            enc = _o200k()
            return (lambda text: len(enc.encode(text))), "o200k_base (exact)"
        except Exception:  # noqa: BLE001 - the package or its data missing: cl100k with its margin, said so
            margin = float(spec.get("fallback_margin", 0.10))
    else:
        margin = float(spec.get("margin", 0.0))

    def count(text: str) -> int:
        return math.ceil(_count_cl100k(text, labels) * (1 + margin))
    return count, f"approx (cl100k_base +{round(margin * 100)}%)"


def count_parts(family: str, parts: dict[str, str]) -> dict:
    """The parts' tokens for `family`. An exact count is memoized on everything it is computed from
    (the family's data, the parts, the identity line): loading the o200k tokenizer (bpe-openai's 74 MB
    extension) costs ~0.4 s of CPU, and doctor counts the same standing text on every call."""
    replaced = None
    if IDENTITY in parts:
        client = next(c for c, f in CLIENT_FAMILY.items() if f == family)
        replaced = clients()[client]["append_identity"][0]
    k = memo.key("count_parts", family, json.dumps(families()[family], sort_keys=True),
                 json.dumps(parts, sort_keys=True), replaced or "")
    known = memo.get("standing", k)
    if isinstance(known, dict):
        return known
    count, label = counter(family)
    tokens = {name: count(text) for name, text in parts.items()}
    if replaced is not None:
        tokens[IDENTITY] = max(0, tokens[IDENTITY] - count(replaced))
    largest = max(tokens, key=tokens.get) if tokens else None
    counted = {"tokens": sum(tokens.values()), "parts": tokens, "label": label, "largest": largest}
    if label.endswith("(exact)"):         # an approximation (a tokenizer missing) is made again next time
        memo.put("standing", k, counted)
    return counted


def standing_context(subsystems: dict, role=None) -> dict:
    """Tokens capsule adds to every request of a session of `role`, per model family.

    The top-level figures are the role's own client's family (Claude Code's for shell roles, which
    register nothing: they are what `capsule up` would add to a client started inside it)."""
    kind = role.agent.kind if role is not None else "claude"
    own = kind if kind in CLIENT_FAMILY else "claude"
    out: dict = {"client": own, "families": {}}
    for client, family in CLIENT_FAMILY.items():
        try:
            counted = count_parts(family, texts(client, role, subsystems))
        except Exception as exc:  # noqa: BLE001 - unmeasurable is reported as such, never hidden
            counted = {"tokens": 0, "parts": {f"unavailable: {type(exc).__name__}: {exc}": 0}, "label": "approx",
                       "largest": None}
        counted["client"] = client
        out["families"][family] = counted
    mine = out["families"][CLIENT_FAMILY[own]]
    out.update(tokens=mine["tokens"], parts=mine["parts"], label=mine["label"], largest=mine["largest"],
               family=CLIENT_FAMILY[own])
    return out


def everything_on() -> dict:
    """The standing context capsule injects with everything on (the role's own figure is doctor's);
    the session-savings report nets it out."""
    try:
        on = {k: planning.Decision(k, True, "report") for k in planning.SUBSYSTEMS}
        return standing_context(on)
    except Exception as exc:  # noqa: BLE001 - unmeasurable is reported as such, never hidden
        return {"tokens": 0, "parts": {f"unavailable: {type(exc).__name__}": 0}, "label": "approx"}
