"""Codex rollouts (`sessions/YYYY/MM/DD/rollout-*.jsonl`) -> calls, tool events.

Not responsible for finding files, offsets or storage. Pure: lines and the file's carried state in,
a Batch out. Invariant: a call is a `token_count` event whose cumulative totals differ from the
previous one in the same file; its buckets come from `last_token_usage`, never from the cumulative
totals, and `token_usage_record` lines only lend their response id (traps 1-6 of USAGE-FORMATS.md).
"""

from __future__ import annotations

import json
import os
import re

from capsule.measure.transcripts.transcript_common import guarded, iso_ts, result_fields, text, tool_kind
from capsule.ground.numbers import bounded
from capsule.measure.usage import Batch, Call, Session, ToolEvent
from capsule.store.quota_rows import MAX_UTILIZATION, TIME_MAX, Sample

AGENT = "codex"
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
TOTAL_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def usage_buckets(u: dict) -> dict:
    """Codex usage -> buckets: fresh = input - cached, cache read = cached, output includes reasoning."""
    cached = _int(u.get("cached_input_tokens"))
    return {"input_tokens": max(_int(u.get("input_tokens")) - cached, 0), "cache_read_input_tokens": cached,
            "cache_creation_5m": _int(u.get("cache_write_input_tokens")), "cache_creation_1h": 0,
            "output_tokens": _int(u.get("output_tokens"))}


def parse(lines, origin: str, state: dict) -> Batch:
    batch = Batch()
    for raw in lines:
        with guarded(batch, state):
            _line(raw, origin, state, batch)
    if state.get("session"):
        batch.sessions.append(Session(AGENT, state["session"], cwd=state.get("cwd"), parent=state.get("parent"),
                                      first_ts=state.get("first_ts"), last_ts=state.get("last_ts"), origin=origin))
    return batch


def _line(raw: bytes, origin: str, state: dict, batch: Batch) -> None:
    line = json.loads(raw)
    if not isinstance(line, dict) or not isinstance(line.get("payload"), dict):
        return
    kind, p, ts = line.get("type"), line["payload"], iso_ts(line.get("timestamp"))
    if ts is not None:
        state["last_ts"] = ts
        state.setdefault("first_ts", ts)
    if kind == "session_meta":
        fresh = not state.get("thread")
        _meta(p, state)
        if fresh and ts is not None:
            sub = p.get("thread_source") == "subagent" or bool(p.get("parent_thread_id"))
            batch.route.append({"kind": "boundary", "ts": ts, "session": state.get("session"),
                                "thread": state.get("thread"), "task_class": "subagent" if sub else "main",
                                "reason": "subagent start" if sub else (
                                    "session fork" if p.get("forked_from_id") else "session start"),
                                "detail": {"cli_version": text(p.get("cli_version"))}})
    elif kind == "turn_context" and isinstance(p.get("model"), str):
        if ts is not None and state.get("thread"):
            # a turn: the user's prompt after a finished turn; its model and effort as Codex ran them
            batch.route.append({"kind": "boundary", "ts": ts, "session": state.get("session"),
                                "thread": state.get("thread"), "task_class": "main", "reason": "turn",
                                "detail": {"model": text(p["model"]), "effort": text(p.get("effort"))}})
        state["model"] = p["model"]
        state.setdefault("cwd", text(p.get("cwd")))
    elif kind == "token_usage_record" and isinstance(p.get("usage"), dict):
        state["pending"] = [text(p.get("response_id")), [_int(p["usage"].get(k)) for k in TOTAL_KEYS]]
    elif kind == "event_msg" and p.get("type") == "token_count":
        _token_count(p, ts, origin, state, batch)
        if isinstance(p.get("rate_limits"), dict) and ts is not None:
            batch.route.append({"kind": "rate_limits", "ts": ts, "session": state.get("session"),
                                "payload": {"rate_limits": p["rate_limits"]}})
    elif kind == "event_msg" and p.get("type") == "item_completed":
        _read_item(p.get("item"), ts, state, batch)
    elif kind == "response_item":
        _response_item(p, ts, state, batch)
    elif kind == "compacted" and state.get("session"):
        session, thread = _ids(state)
        if ts is not None:
            batch.route.append({"kind": "boundary", "ts": ts, "session": session, "thread": state.get("thread"),
                                "task_class": "main", "reason": "compaction", "detail": {}})
        batch.tools.append(ToolEvent(AGENT, f"{state.get('thread')}:compacted:{line.get('timestamp')}",
                                     session, thread, ts, "compact", "compact"))


def _meta(p: dict, state: dict) -> None:
    if state.get("thread"):
        return  # a resumed rollout repeats nothing we need; the first meta names the thread
    thread = text(p.get("id"))
    state["thread"] = thread
    # A subagent's rollout names the parent's session; its calls belong to that session.
    state["session"] = text(p.get("session_id")) or thread
    state["parent"] = text(p.get("forked_from_id")) or text(p.get("parent_thread_id"))
    state["cwd"] = text(p.get("cwd"))


def _ids(state: dict) -> tuple[str | None, str | None]:
    session, thread = state.get("session"), state.get("thread")
    return session, (thread if thread != session else None)


def _token_count(p: dict, ts, origin: str, state: dict, batch: Batch) -> None:
    info = p.get("info")
    if not isinstance(info, dict):
        return  # rate-limit-only event
    total, last = info.get("total_token_usage"), info.get("last_token_usage")
    if not isinstance(total, dict) or not isinstance(last, dict):
        return
    key = [_int(total.get(k)) for k in TOTAL_KEYS]     # kept in the file's state (JSON): counts only
    if key == state.get("last_total"):
        return  # a repeated snapshot (trap 2), not a call
    state["last_total"] = key
    session, thread = _ids(state)
    if session is None:
        return
    pending = state.pop("pending", None)
    last_key = [_int(last.get(k)) for k in TOTAL_KEYS]
    rid = pending[0] if pending and pending[1] == last_key and isinstance(pending[0], str) else None
    call_id = rid or f"{state.get('thread')}:{total.get('total_tokens')}"
    batch.calls.append(Call(agent=AGENT, call_id=call_id, session_id=session, model=state.get("model"), ts=ts,
                            thread_id=thread, origin=origin, **usage_buckets(last)))


def _response_item(p: dict, ts, state: dict, batch: Batch) -> None:
    session, thread = _ids(state)
    if session is None:
        return
    t = p.get("type")
    if t in ("function_call", "custom_tool_call", "local_shell_call") and isinstance(p.get("call_id"), str):
        name = p.get("name") or t
        if t == "custom_tool_call":
            inp = {"input": p.get("input")}
        elif t == "local_shell_call":
            inp = (p.get("action") or {})
        else:
            try:
                inp = json.loads(p.get("arguments") or "{}")
            except ValueError:
                inp = {}
        kind, target = tool_kind(name, inp if isinstance(inp, dict) else {})
        if kind == "edit" and isinstance(p.get("input"), str):
            target = "\n".join(_abs(state, f.strip()) for f in PATCH_FILE_RE.findall(p["input"])) or None
        batch.tools.append(ToolEvent(AGENT, p["call_id"], session, thread, ts, name, kind, target))
    elif t in ("function_call_output", "custom_tool_call_output") and isinstance(p.get("call_id"), str):
        out = p.get("output")
        if isinstance(out, dict):
            out = out.get("content") or out.get("output") or ""
        text = out if isinstance(out, str) else "\n".join(
            c.get("text", "") for c in out or [] if isinstance(c, dict))
        failed = bool(re.search(r"^Process exited with code [1-9]", text, re.M))
        batch.tools.append(ToolEvent(AGENT, p["call_id"], session, thread, ts, **result_fields(text, failed, state=state)))


def _read_item(item, ts, state: dict, batch: Batch) -> None:
    """A finished command whose parsed form is a plain file read: record the path and what was read."""
    if not isinstance(item, dict) or item.get("type") != "CommandExecution" or not isinstance(item.get("id"), str):
        return
    parsed = item.get("parsed_cmd") or []
    if len(parsed) != 1 or not isinstance(parsed[0], dict) or parsed[0].get("type") != "read":
        return
    session, thread = _ids(state)
    path = parsed[0].get("path") or parsed[0].get("name")
    if session is None or not isinstance(path, str):
        return
    cwd = item.get("cwd") or state.get("cwd") or ""
    out = item.get("aggregated_output") if isinstance(item.get("aggregated_output"), str) else ""
    fields = result_fields(out, False, state=state)
    batch.tools.append(ToolEvent(AGENT, item["id"], session, thread, ts, kind="read",
                                 target=_abs({"cwd": cwd.removeprefix("file://")}, path),
                                 result_hash=fields["result_hash"]))


def _abs(state: dict, path: str) -> str:
    return path if os.path.isabs(path) or not state.get("cwd") else os.path.join(state["cwd"], path)


def from_codex_event(payload: dict, account: str, session: str | None, ts: float) -> list[Sample]:
    """A Codex rollout `token_count` event's `rate_limits` (primary / secondary windows)."""
    limits = payload.get("rate_limits") if isinstance(payload, dict) else None
    out = []
    if not isinstance(limits, dict):
        return out
    for name in ("primary", "secondary"):
        w = limits.get(name)
        used = bounded(w.get("used_percent"), 0.0, 100 * MAX_UTILIZATION) if isinstance(w, dict) else None
        if used is None:
            continue
        minutes = bounded(w.get("window_minutes"), 1, 1e6)
        minutes = int(minutes) if minutes is not None and isinstance(w.get("window_minutes"), int) else None
        label = f"{minutes // 60}h" if minutes is not None and minutes < 1440 else (
            f"{minutes // 1440}d" if minutes is not None else name)
        reset = bounded(w.get("resets_at"), 0.0, TIME_MAX)
        if reset is None:
            ahead = bounded(w.get("resets_in_seconds"), 0.0, TIME_MAX)
            reset = bounded(ts + ahead, 0.0, TIME_MAX) if ahead is not None else None
        # plan_type names a ChatGPT plan (a subscription login); with an API key Codex leaves it null
        regime = "subscription" if limits.get("plan_type") else "unknown"
        out.append(Sample(ts, account, regime, "openai", label, used / 100.0,
                          None, reset, session, "rollout"))
    return out
