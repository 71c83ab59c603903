"""Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-*.jsonl`) -> calls, tool events.

Not responsible for finding files, offsets or storage. Pure: lines and the file's carried state in,
a Batch out. Lines: a header (`sessionId`, `projectHash`, `startTime`, `kind`), `{"$set": …}`
updates, and messages (`id`, `timestamp`, `type`: user | gemini | info | error, …). Invariant: a
call is a `gemini` message with `tokens`; Gemini CLI writes one message again once its tool calls
ran (same id, same tokens), so the id is the call id and the store counts it once. Buckets:
`tokens.input` is the prompt with its cached part (the API's promptTokenCount), `cached` the
cache read, `output` plus `thoughts` the output (thinking is billed as output).
"""

from __future__ import annotations

import json

from capsule.measure.transcripts.transcript_common import guarded, iso_ts, result_fields, text, tool_kind
from capsule.measure.usage import Batch, Call, Session, ToolEvent

AGENT = "gemini"


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def usage_buckets(t: dict) -> dict:
    cached = _int(t.get("cached"))
    return {"input_tokens": max(_int(t.get("input")) - cached, 0), "cache_read_input_tokens": cached,
            "cache_creation_5m": 0, "cache_creation_1h": 0,
            "output_tokens": _int(t.get("output")) + _int(t.get("thoughts"))}


def parse(lines, origin: str, state: dict) -> Batch:
    batch = Batch()
    for raw in lines:
        with guarded(batch, state):
            _line(json.loads(raw), origin, state, batch)
    if state.get("session"):
        batch.sessions.append(Session(AGENT, state["session"], first_ts=state.get("first_ts"),
                                      last_ts=state.get("last_ts"), origin=origin))
    return batch


def _line(entry, origin: str, state: dict, batch: Batch) -> None:
    if not isinstance(entry, dict):
        return
    if isinstance(entry.get("sessionId"), str) and "projectHash" in entry:
        state["session"] = entry["sessionId"]
        return
    if isinstance(entry.get("$set"), dict):
        for message in entry["$set"].get("messages") or []:   # a rewrite of the whole list
            _line(message, origin, state, batch)
        return
    session = state.get("session")
    ts = iso_ts(entry.get("timestamp"))
    if not session or not isinstance(entry.get("id"), str):
        return
    if ts is not None:
        state["first_ts"] = ts if state.get("first_ts") is None else min(state["first_ts"], ts)
        state["last_ts"] = ts if state.get("last_ts") is None else max(state["last_ts"], ts)
    if entry.get("type") != "gemini":
        return
    if isinstance(entry.get("tokens"), dict):
        batch.calls.append(Call(agent=AGENT, call_id=entry["id"], session_id=session, model=text(entry.get("model")),
                                ts=ts, origin=origin, **usage_buckets(entry["tokens"])))
    for call in entry.get("toolCalls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            continue
        name = text(call.get("name")) or ""
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        kind, target = tool_kind(name, args)
        fields = {}
        outputs = [r["functionResponse"].get("response") for r in call.get("result") or []
                   if isinstance(r, dict) and isinstance(r.get("functionResponse"), dict)]
        if outputs:
            body = "\n".join(o["output"] if isinstance(o, dict) and isinstance(o.get("output"), str)
                             else json.dumps(o, ensure_ascii=False) for o in outputs)
            fields = result_fields(body, call.get("status") == "error", None, state)
        batch.tools.append(ToolEvent(AGENT, call["id"], session, None, ts, name, kind, target, **fields))
