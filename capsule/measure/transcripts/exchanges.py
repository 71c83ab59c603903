"""Tool exchanges from the agents' transcripts: what the model asked a tool for and what it got back.

For `capsule ctx whatif`, which replays each result through the engine as its door would have
received it. Not responsible for usage or cost (claude.py, codex.py read those) or for finding files
(capsule.measure.ingest). Pure: a file's lines in, exchanges out, in the file's order.
Invariant: one exchange per (agent, tool call id): a forked or resumed transcript that replays its
parent's lines yields each exchange once, with the first file's copy (files are read originals first).
"""

from __future__ import annotations

import json
from collections import namedtuple

from capsule.measure.transcripts.transcript_common import iso_ts, text

# agent, session, thread (a subagent's id or None), ts (the result's), tool call id, tool name,
# input (dict), result text, is_error, api (the wire format its door reads: anthropic | openai)
Exchange = namedtuple("Exchange", ("agent", "session", "thread", "ts", "tool_id", "name", "input", "text",
                                   "is_error", "api", "images"), defaults=((),))
# images: (media_type, base64 data) of each image block the result carried (a Read of a PNG, a PDF page)
# One thing said in a thread (the model's text and tool inputs, by="agent"; the user's prompt, by="user"),
# for bounces: what the agent asked for later, and what it already knew before a result.
Said = namedtuple("Said", ("agent", "session", "thread", "ts", "text", "by"), defaults=("agent",))


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _images(content) -> tuple:
    if not isinstance(content, list):
        return ()
    return tuple((str(src.get("media_type") or ""), src["data"]) for b in content
                 if isinstance(b, dict) and b.get("type") in ("image", "document")
                 for src in [b.get("source")] if isinstance(src, dict) and isinstance(src.get("data"), str))


def claude(lines) -> tuple[list[Exchange], list[Said]]:
    asked: dict[str, tuple[str, dict]] = {}
    out, said = [], []
    for raw in lines:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("message"), dict):
            continue
        session, ts, msg = entry.get("sessionId"), iso_ts(entry.get("timestamp")), entry["message"]
        if not isinstance(session, str):
            continue
        thread = text(entry.get("agentId")) if entry.get("isSidechain") else None
        if isinstance(msg.get("content"), str):
            said.append(Said("claude", session, thread, ts, msg["content"],
                             "agent" if entry.get("type") == "assistant" else "user"))
            continue
        if not isinstance(msg.get("content"), list):
            continue
        for b in msg["content"]:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                inp = b.get("input") if isinstance(b.get("input"), dict) else {}
                asked[b["id"]] = (str(b.get("name") or ""), inp)
                said.append(Said("claude", session, thread, ts, json.dumps(inp, sort_keys=True)))
            elif b.get("type") == "text":
                said.append(Said("claude", session, thread, ts, str(b.get("text") or ""),
                                 "agent" if entry.get("type") == "assistant" else "user"))
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in asked:
                name, inp = asked[b["tool_use_id"]]
                out.append(Exchange("claude", session, thread, ts, b["tool_use_id"], name, inp,
                                    _result_text(b.get("content")), bool(b.get("is_error")), "anthropic",
                                    _images(b.get("content"))))
    return out, said


def codex(lines) -> tuple[list[Exchange], list[Said]]:
    asked: dict[str, tuple[str, dict]] = {}
    out, said = [], []
    session = thread = None
    for raw in lines:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or not isinstance(line.get("payload"), dict):
            continue
        kind, p, ts = line.get("type"), line["payload"], iso_ts(line.get("timestamp"))
        if kind == "session_meta" and session is None:
            thread = text(p.get("id"))
            session = text(p.get("session_id")) or thread
            thread = thread if thread != session else None
            continue
        if kind != "response_item" or session is None:
            continue
        t = p.get("type")
        if t in ("function_call", "custom_tool_call") and isinstance(p.get("call_id"), str):
            try:
                inp = json.loads(p.get("arguments") or "{}") if t == "function_call" else {"input": p.get("input")}
            except ValueError:
                inp = {}
            inp = inp if isinstance(inp, dict) else {}
            asked[p["call_id"]] = (str(p.get("name") or t), inp)
            said.append(Said("codex", session, thread, ts, json.dumps(inp, sort_keys=True)))
        elif t == "message" and p.get("role") in ("assistant", "user"):
            said.append(Said("codex", session, thread, ts, _result_text(
                [{"type": "text", "text": c.get("text", "")} for c in p.get("content") or [] if isinstance(c, dict)]),
                "agent" if p.get("role") == "assistant" else "user"))
        elif t in ("function_call_output", "custom_tool_call_output") and p.get("call_id") in asked:
            o = p.get("output")
            if isinstance(o, dict):
                o = o.get("content") or o.get("output") or ""
            body = o if isinstance(o, str) else _result_text(o)
            name, inp = asked[p["call_id"]]
            out.append(Exchange("codex", session, thread, ts, p["call_id"], name, inp, body, False, "openai"))
    return out, said


def collect(files: list[tuple[str, object]]) -> tuple[list[Exchange], list[Said]]:
    """(agent, path) pairs, originals first -> every exchange once, and what was said after."""
    seen, exchanges, said = set(), [], []
    for agent, path in files:
        try:
            with open(path, "rb") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        ex, s = (claude if agent == "claude" else codex)(lines)
        for e in ex:
            if (e.agent, e.tool_id) not in seen:
                seen.add((e.agent, e.tool_id))
                exchanges.append(e)
        said.extend(s)
    return exchanges, said
