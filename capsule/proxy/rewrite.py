"""The pure core of the proxy door: find the tool results in a model API request and rewrite them.

Not responsible for HTTP, memoization or the engine: `rewrite()` takes a parsed body and a
callback `shrink(call, text) -> text`, and returns the new body bytes, or None when nothing changed.
Invariant: only tool-result text changes; every other value of the body keeps its JSON value, and
the same body always serializes to the same bytes (so an unchanged prefix stays byte-identical).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Callable

from blake3 import blake3

from capsule.agents import claude
from capsule.ground.wire_json import parse, serialize  # noqa: F401 - the body's one reader and writer


CCR_MARK = "<<ccr:"      # capsule already shrank this block (its footer names the handle): never again


@lru_cache(maxsize=1)
def config() -> dict:
    return tomllib.loads(resources.files("capsule.proxy").joinpath("data/apis.toml").read_text())


def limit(name: str) -> int:
    return int(config()["limits"][name])


@dataclass(frozen=True)
class Call:
    """One tool result and what the model asked for: the engine's command, path and intent."""

    api: str                 # "anthropic" | "openai" | "gemini"
    call_id: str
    tool: str
    command: str | None
    path: str | None
    intent: str | None
    exit_code: int | None
    owned_elsewhere: str | None   # why another door owns it (INV-8), or None
    numbered: bool = False        # the client numbers each line (`N<TAB>text`)
    prompt: str | None = None     # the user's last prompt before this result (a task cue)
    edits: tuple = ()             # the conversation's edit calls before it, newest first: "path\nnew text"


Shrink = Callable[[Call, str], str]


def rewrite(api: str, body: Any, shrink: Shrink, *, shims_on: bool, hooks_on: bool = False) -> bytes | None:
    """New request bytes with each tool result passed through `shrink`; None when nothing changed.
    hooks_on: Claude Code's hook door answers its native reads and other MCP servers' results
    (agents/claude.py hook_owns): those pass untouched here, so no result is shrunk twice."""
    if not isinstance(body, dict):
        return None
    if api == "anthropic":
        if not _anthropic(body, shrink, shims_on, hooks_on):
            return None
    elif api == "gemini":
        if not _gemini(body, shrink, shims_on):
            return None
    elif not _openai(body, shrink, shims_on):
        return None
    return serialize(body)


def handles(api: str, sub_path: str, what: str) -> bool:
    """Whether a POST to `sub_path` is rewritten (what="rewrite") or has its usage read ("usage"):
    the API's exact `{what}_paths`, or (Gemini: the model is in the path) `path_pattern`'s method
    in `{what}_methods`."""
    cfg = config()[api]
    if f"{what}_paths" in cfg:
        return sub_path in cfg[f"{what}_paths"]
    m = re.fullmatch(cfg["path_pattern"], sub_path)
    return bool(m) and m.group(1) in cfg[f"{what}_methods"]


def conversation(api: str, body: dict, headers: dict[str, str]) -> str:
    """The conversation a request continues (memo scope, ledger scope, usage session): the client's own
    session id when it sends one (Claude Code's session, Codex's thread), the same id the shims and the
    transcripts use; else a hash of the conversation's first message."""
    if api == "anthropic":
        sid = headers.get("x-claude-code-session-id")
        if not sid:
            user = (body.get("metadata") or {}).get("user_id") if isinstance(body.get("metadata"), dict) else None
            sid = _session_from_user_id(user)
        first = (body.get("messages") or [None])[0]
    elif api == "gemini":   # the API carries no session id: the conversation's first content
        sid = None
        first = (body.get("contents") or [None])[0]
    else:
        sid = body.get("prompt_cache_key") or headers.get("session_id") or headers.get("conversation_id")
        first = next((i for i in body.get("input") or [] if isinstance(i, dict) and i.get("role") == "user"), None)
    if isinstance(sid, str) and sid:
        return sid[:80]

    return f"root-{blake3(serialize(first)).hexdigest()[:16]}"


def _session_from_user_id(user: Any) -> str | None:
    if not isinstance(user, str) or not user:
        return None
    if user.startswith("{"):
        try:
            sid = json.loads(user).get("session_id")
            return sid if isinstance(sid, str) else None
        except (ValueError, AttributeError):
            return None
    m = re.search(r"session_([0-9a-fA-F-]{8,})", user)
    return m.group(1) if m else user


# ---- Anthropic Messages -----------------------------------------------------------------------------
def _anthropic(body: dict, shrink: Shrink, shims_on: bool, hooks_on: bool = False) -> bool:
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        return False
    cfg = config()["anthropic"]
    calls: dict[str, tuple[str, dict, str | None]] = {}
    changed = False
    prompt, edits = None, []
    for msg in msgs:
        if not isinstance(msg, dict):
            continue
        if msg.get("role") == "user" and isinstance(msg.get("content"), str):
            prompt = msg["content"][-limit("max_intent_chars"):] or prompt
            continue
        if not isinstance(msg.get("content"), list):
            continue
        blocks = msg["content"]
        if msg.get("role") == "assistant":
            intent = _join(b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                    calls[b["id"]] = (str(b.get("name", "")), b.get("input") if isinstance(b.get("input"), dict) else {},
                                      intent)
                    edit = _edit(cfg, calls[b["id"]][0], calls[b["id"]][1])
                    if edit:
                        edits.insert(0, edit)
            continue
        said = _join(b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                     and not str(b.get("text", "")).lstrip().startswith("<"))
        if said:
            prompt = said[-limit("max_intent_chars"):]
        for b in blocks:
            if not isinstance(b, dict) or b.get("type") != "tool_result":
                continue
            name, args, intent = calls.get(str(b.get("tool_use_id")), ("", {}, None))
            call = _call("anthropic", cfg, str(b.get("tool_use_id", "")), name, args, intent, shims_on,
                         prompt, tuple(edits[:MAX_EDITS]))
            if hooks_on and call.owned_elsewhere is None and claude.hook_owns(name):
                call = Call(**{**call.__dict__, "owned_elsewhere": "Claude Code tool: the hook door owns it"})
            content = b.get("content")
            if isinstance(content, str):
                new = _one(call, content, shrink, cfg)
                if new != content:
                    b["content"], changed = new, True
            elif isinstance(content, list):
                for item in content:
                    if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
                        new = _one(call, item["text"], shrink, cfg)
                        if new != item["text"]:
                            item["text"], changed = new, True
    return changed


# ---- OpenAI Responses -------------------------------------------------------------------------------
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
_CALL_TYPES = ("function_call", "custom_tool_call")


def _openai(body: dict, shrink: Shrink, shims_on: bool) -> bool:
    items = body.get("input")
    if not isinstance(items, list):
        return False
    cfg = config()["openai"]
    calls: dict[str, tuple[str, dict, str | None]] = {}
    intent: str | None = None
    changed = False
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message" and item.get("role") == "assistant" and isinstance(item.get("content"), list):
            intent = _join(c.get("text") for c in item["content"] if isinstance(c, dict)) or intent
        elif kind == "message" and item.get("role") == "user":
            intent = None
        elif kind in _CALL_TYPES and isinstance(item.get("call_id"), str):
            name = str(item.get("name", ""))
            if item.get("namespace"):
                name = f"{item['namespace']}__{name}" if not name.startswith(str(item["namespace"])) else name
            calls[item["call_id"]] = (name, _arguments(item), intent)
        elif kind in _OUTPUT_TYPES:
            name, args, call_intent = calls.get(str(item.get("call_id")), ("", {}, None))
            call = _call("openai", cfg, str(item.get("call_id", "")), name, args, call_intent, shims_on)
            out = item.get("output")
            if isinstance(out, str):
                new = _one(call, out, shrink, cfg)
                if new != out:
                    item["output"], changed = new, True
            elif isinstance(out, list):
                for c in out:
                    if isinstance(c, dict) and c.get("type") in ("input_text", "output_text", "text") \
                            and isinstance(c.get("text"), str):
                        new = _one(call, c["text"], shrink, cfg)
                        if new != c["text"]:
                            c["text"], changed = new, True
    return changed


# ---- Gemini generateContent / streamGenerateContent ---------------------------------------------------
def _gemini(body: dict, shrink: Shrink, shims_on: bool) -> bool:
    """`functionResponse` parts answer the `functionCall` parts of the model turn before them: by
    `id` when both carry one, else the next unanswered call of the same name, in order. The memo's
    call id is the call's own id, else the name and the response's place in the conversation
    (the history only grows, so the place is stable across turns)."""
    contents = body.get("contents")
    if not isinstance(contents, list):
        return False
    cfg = config()["gemini"]
    pending: list[tuple[str | None, str, dict, str | None]] = []    # (id, name, args, intent)
    changed, place = False, 0
    for content in contents:
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            continue
        parts = content["parts"]
        if content.get("role") == "model":
            intent = _join(p.get("text") for p in parts if isinstance(p, dict) and not p.get("thought"))
            pending = [(fc.get("id") if isinstance(fc.get("id"), str) else None, str(fc.get("name", "")),
                        fc.get("args") if isinstance(fc.get("args"), dict) else {}, intent)
                       for p in parts if isinstance(p, dict) and isinstance(fc := p.get("functionCall"), dict)]
            continue
        for p in parts:
            fr = p.get("functionResponse") if isinstance(p, dict) else None
            if not isinstance(fr, dict):
                continue
            place += 1
            name = str(fr.get("name", ""))
            fid = fr.get("id") if isinstance(fr.get("id"), str) else None
            match = next((c for c in pending if fid and c[0] == fid), None) or \
                next((c for c in pending if c[1] == name), None)
            if match is not None:
                pending.remove(match)
            cid, _, args, intent = match or (None, name, {}, None)
            call = _call("gemini", cfg, fid or cid or f"{name}#{place}", name, args, intent, shims_on)
            resp = fr.get("response")
            if isinstance(resp, dict) and isinstance(resp.get("output"), str):
                new = _one(call, resp["output"], shrink, cfg)
                if new != resp["output"]:
                    resp["output"], changed = new, True
    return changed


def _arguments(item: dict) -> dict:
    raw = item.get("arguments", item.get("input"))
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
            return parsed if isinstance(parsed, dict) else {}
        except ValueError:
            return {}
    return {}


# ---- shared -----------------------------------------------------------------------------------------
MAX_EDITS = 8


def _edit(cfg: dict, name: str, args: dict) -> str | None:
    """An edit tool call (apis.toml edit_tools) as a task cue: "path\nnew text", or None."""
    if name not in cfg.get("edit_tools", ()):
        return None
    path = args.get("file_path") or args.get("notebook_path") or args.get("path") or ""
    parts = [args.get(k) for k in ("new_string", "content", "new_source")]
    parts += [e.get("new_string") for e in args.get("edits") or [] if isinstance(e, dict)]
    text = "\n".join(p for p in parts if isinstance(p, str))
    return f"{path}\n{text}"[:limit("max_intent_chars")] if (path or text) else None


def _call(api: str, cfg: dict, call_id: str, name: str, args: dict, intent: str | None, shims_on: bool,
          prompt: str | None = None, edits: tuple = ()) -> Call:
    owned = None
    if name.startswith(cfg["own_tool_prefix"]):
        owned = "capsule's own MCP tool"
    elif shims_on and name in cfg["shell_tools"]:
        owned = "shell command: the shims own it"
    spec = cfg.get("tools", {}).get(name, {})
    command = path = None
    if "command" in spec:
        value = args.get(spec["command"])
        if isinstance(value, list) and value:
            value = value[-1] if len(value) >= 3 and value[-2] in ("-c", "-lc") else " ".join(map(str, value))
        command = value if isinstance(value, str) else None
    elif spec.get("command_of") == "claude_grep" and isinstance(args.get("pattern"), str):
        command = claude.grep_command(args)     # its flags too: context asked for makes it a read of regions
    elif "command_from" in spec and isinstance(args.get(spec["command_from"]), str):
        command = spec.get("command_prefix", "") + shlex.quote(args[spec["command_from"]])
    if "path" in spec and isinstance(args.get(spec["path"]), str):
        path = args[spec["path"]]
        if "window" in spec and command is None:
            command = _read_command(path, args, spec["window"])
    if not intent and isinstance(args.get("description"), str):
        intent = args["description"]
    if intent:
        intent = intent[-limit("max_intent_chars"):]
    return Call(api, call_id, name, command, path, intent or None, None, owned, bool(spec.get("numbered")),
                prompt, tuple(edits))


def _read_command(path: str, args: dict, window: dict) -> str:
    """A file-read tool call as the shell read it stands for: bounded -> sed -n, whole -> cat."""
    offset, limit = args.get(window["offset"]), args.get(window["limit"])
    offset = offset if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0 else None
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None
    if offset is None and limit is None:
        return f"cat {shlex.quote(path)}"
    first = offset or 1
    return f"sed -n '{first},{first + (limit or int(window['page'])) - 1}p' {shlex.quote(path)}"


def _one(call: Call, text: str, shrink: Shrink, cfg: dict) -> str:
    """The cheap checks run on every request (a memo hit must stay cheap); the rest in engine_view()."""
    if call.owned_elsewhere or len(text) < limit("min_block_chars") or CCR_MARK in text:
        return text
    return shrink(call, text)


def engine_view(call: Call, text: str, observe: Shrink) -> str:
    """What the engine sees of a block seen for the first time, and its answer mapped back: the exit
    status read from the result, the client's envelope around a command's output set aside (Gemini
    CLI's `<untrusted_context>`, `Output: `, its status lines) and put back around the answer, and a
    numbered Read as the file's own text, renumbered afterwards."""
    cfg = config()[call.api]
    head, body, tail = _envelope(cfg, text)
    m = re.search(cfg["exit_code_pattern"], tail if body is not text else text[:4096])
    if m:
        call = Call(**{**call.__dict__, "exit_code": int(m.group(1))})
    if body is not text:
        out = observe(call, body)
        return text if out == body else head + out + tail
    if call.numbered:
        plain = unnumber(text)
        if plain is not None:
            out = observe(call, plain[0])
            return text if out == plain[0] else renumber(plain[0], out, plain[1])
    return observe(call, text)


def _envelope(cfg: dict, text: str) -> tuple[str, str, str]:
    """(head, the command's own output, tail) by the API's `envelope` pattern; the text itself as
    the body (the same object) when it has none or does not match."""
    pattern = cfg.get("envelope")
    m = re.fullmatch(pattern, text, re.DOTALL) if pattern else None
    if m is None or not m.group("body"):
        return "", text, ""
    return text[:m.start("body")], m.group("body"), text[m.end("body"):]


_NUMBERED = re.compile(r"(\d+)\t")


def unnumber(text: str) -> tuple[str, int] | None:
    """`N<TAB>line` on every line -> (the lines' own text, first N); None unless every line is numbered
    consecutively (then the text is not what it seems and goes to the engine as it is)."""
    lines = text.split("\n")
    first = _NUMBERED.match(lines[0])
    if not first:
        return None
    start = int(first.group(1))
    out = []
    for i, line in enumerate(lines):
        m = _NUMBERED.match(line)
        if not m or int(m.group(1)) != start + i:
            return None
        out.append(line[m.end():])
    return "\n".join(out), start


def renumber(plain: str, out: str, start: int) -> str:
    """Give each output line that is a line of the file, in order, its number back; markers, footers and
    re-shaped lines stay as the engine wrote them."""
    index: dict[str, list[int]] = {}
    for i, line in enumerate(plain.split("\n")):
        index.setdefault(line, []).append(i)
    pos, lines = 0, []
    for line in out.split("\n"):
        cands = index.get(line) if line.strip() else None
        n = next((c for c in cands if c >= pos), None) if cands else None
        if n is None:
            lines.append(line)
        else:
            lines.append(f"{start + n}\t{line}")
            pos = n + 1
    return "\n".join(lines)


def _join(parts) -> str | None:
    text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    return text or None
