"""Claude Code transcripts (`projects/<slug>/<session>.jsonl`, subagent files) -> calls, tool events.

Not responsible for finding files, offsets or storage (capsule.measure.ingest, usage). Pure: lines
in, a Batch out. Invariant: only `assistant` entries with a real `msg_…` id count as calls; every
entry of one response yields the same call id, so the store counts it once (traps 1-5 and 7 of
shared/USAGE-FORMATS.md; the Agent tool's `toolUseResult.usage` is never read).
"""

from __future__ import annotations

import json

from capsule.measure.transcripts.transcript_common import guarded, iso_ts, result_fields, text, tool_kind
from capsule.measure.usage import Batch, Call, Session, ToolEvent

AGENT = "claude"
SYNTHETIC_MODEL = "<synthetic>"


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def usage_buckets(usage: dict) -> dict:
    """Claude usage -> the four buckets; the cache-creation total is authoritative (trap 7):
    1h from the split, 5m as the rest, whether or not the split is present or zero."""
    created = _int(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation") if isinstance(usage.get("cache_creation"), dict) else {}
    one_hour = min(_int(split.get("ephemeral_1h_input_tokens")), created)
    return {"input_tokens": _int(usage.get("input_tokens")),
            "cache_read_input_tokens": _int(usage.get("cache_read_input_tokens")),
            "cache_creation_5m": created - one_hour, "cache_creation_1h": one_hour,
            "output_tokens": _int(usage.get("output_tokens"))}


def parse(lines, origin: str, state: dict) -> Batch:
    """Parse complete JSONL lines (bytes). `state` persists between chunks of one file."""
    batch = Batch()
    seen_sessions: dict[str, Session] = {}
    for raw in lines:
        with guarded(batch, state):
            _line(raw, origin, state, batch, seen_sessions)
    batch.sessions.extend(seen_sessions.values())
    return batch


def _line(raw: bytes, origin: str, state: dict, batch: Batch, seen_sessions: dict[str, Session]) -> None:
    entry = json.loads(raw)
    if not isinstance(entry, dict):
        return
    session = entry.get("sessionId")
    if not isinstance(session, str):
        return
    ts = iso_ts(entry.get("timestamp"))
    thread = text(entry.get("agentId")) if entry.get("isSidechain") else None
    s = seen_sessions.get(session)
    if s is None:
        s = seen_sessions[session] = Session(AGENT, session, origin=origin)
    if text(entry.get("cwd")) and not s.cwd:
        s.cwd = entry["cwd"]
    if ts is not None:
        s.first_ts = ts if s.first_ts is None else min(s.first_ts, ts)
        s.last_ts = ts if s.last_ts is None else max(s.last_ts, ts)
    kind = entry.get("type")
    if kind == "system" and entry.get("subtype") == "compact_boundary" and isinstance(entry.get("uuid"), str):
        # The prompt is rebuilt from a summary: the cache starts over (explains a read-share drop).
        batch.tools.append(ToolEvent(AGENT, entry["uuid"], session, thread, ts, "compact", "compact"))
        return
    msg = entry.get("message")
    if not isinstance(msg, dict):
        return
    if kind == "assistant":
        _assistant(entry, msg, session, thread, ts, origin, batch)
    elif kind == "user":
        _user(entry, msg, session, thread, ts, batch, state)


def _assistant(entry, msg, session, thread, ts, origin, batch: Batch) -> None:
    mid, usage, model = msg.get("id"), msg.get("usage"), msg.get("model")
    # Synthetic entries (API errors, "No response requested.") are not calls (trap 5).
    if isinstance(mid, str) and mid.startswith("msg_") and isinstance(usage, dict) and model != SYNTHETIC_MODEL \
            and not entry.get("isApiErrorMessage"):
        batch.calls.append(Call(agent=AGENT, call_id=mid, session_id=session, model=model, ts=ts,
                                thread_id=thread, origin=origin, complete=msg.get("stop_reason") is not None,
                                cost_usd=entry.get("costUSD") if isinstance(entry.get("costUSD"), (int, float))
                                and not isinstance(entry.get("costUSD"), bool) else None, **usage_buckets(usage)))
    for block in msg.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
            name = block.get("name") or ""
            inp = block.get("input") if isinstance(block.get("input"), dict) else {}
            kind, target = tool_kind(name, inp)
            batch.tools.append(ToolEvent(AGENT, block["id"], session, thread, ts, name, kind, target))


def _user(entry, msg, session, thread, ts, batch: Batch, state: dict) -> None:
    content = msg.get("content")
    if not isinstance(content, list):
        return
    results = [c for c in content if isinstance(c, dict) and c.get("type") == "tool_result"]
    tur = entry.get("toolUseResult")
    for r in results:
        if not isinstance(r.get("tool_use_id"), str):
            continue
        body = r.get("content")
        body_text = body if isinstance(body, str) else "\n".join(
            c.get("text", "") for c in body or [] if isinstance(c, dict) and c.get("type") == "text")
        # A Read result's file content identifies the version read (for stale re-reads).
        file_content = None
        if len(results) == 1 and isinstance(tur, dict) and isinstance(tur.get("file"), dict):
            file_content = tur["file"].get("content")
        batch.tools.append(ToolEvent(AGENT, r["tool_use_id"], session, thread, ts,
                                     **result_fields(body_text, bool(r.get("is_error")), file_content, state)))
