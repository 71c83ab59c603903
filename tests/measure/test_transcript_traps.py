"""Each transcript trap of shared/USAGE-FORMATS.md, made from the real clients' own lines: the
traps our client versions do not produce by themselves (2.0.x mid-stream entries, Codex Desktop's
doubled snapshots, a missing 5m/1h split) are real lines edited the way those versions write them."""

from __future__ import annotations

import json

from capsule.measure.transcripts import claude_transcript, codex_transcript

KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h", "output_tokens")


def _calls(parse, lines: list[bytes]) -> dict[str, dict]:
    """Dedupe like the store: one row per call id, the largest output count wins."""
    out: dict[str, dict] = {}
    batch = parse(lines, "x", {})
    for c in batch.calls:
        d = {k: getattr(c, k) for k in KEYS}
        if c.call_id not in out or d["output_tokens"] > out[c.call_id]["output_tokens"]:
            out[c.call_id] = d
    return out


def _sum(calls: dict) -> dict:
    return {k: sum(c[k] for c in calls.values()) for k in KEYS}


def test_claude_traps(claude_run):
    lines = claude_run["transcript"].read_bytes().splitlines()
    base = _calls(claude_transcript.parse, lines)
    entries = [json.loads(ln) for ln in lines]
    # Trap 1: the real file has one response written as several entries (thinking, text, 2 tool_use).
    ids = [e["message"]["id"] for e in entries if e["type"] == "assistant"]
    assert max(ids.count(i) for i in ids) == 4
    # Trap 2: the 2.0.x way, each entry written mid-stream (stop_reason null, output so far) before the final.
    mid = []
    for e in entries:
        if e["type"] == "assistant":
            m = dict(e, message={**e["message"], "stop_reason": None,
                                 "usage": {**e["message"]["usage"], "output_tokens": 1}})
            mid.append(json.dumps(m).encode())
        mid.append(json.dumps(e).encode())
    assert _calls(claude_transcript.parse, mid) == base
    assert _calls(claude_transcript.parse, list(reversed(mid))) == base
    # Trap 4: the subagent's usage is repeated in the file, never counted: in the Agent tool's result
    # (2.1.197), or, the agent run in the background (2.1.332), in the task-notification prompt.
    assert any(isinstance(e.get("toolUseResult"), dict) and "usage" in e["toolUseResult"] for e in entries) or any(
        e["type"] == "user" and "<subagent_tokens>" in json.dumps(e.get("message")) for e in entries)
    # Trap 5: a synthetic entry (API error shape) is not a call.
    synth = {**entries[-1], "type": "assistant", "isApiErrorMessage": True,
             "message": {"id": "3c1f0d6e-synthetic", "model": "<synthetic>", "role": "assistant",
                         "content": [{"type": "text", "text": "API Error: 400"}],
                         "usage": {"input_tokens": 0, "output_tokens": 0}}}
    assert _calls(claude_transcript.parse, lines + [json.dumps(synth).encode()]) == base
    # Trap 7: no 5m/1h split (Bedrock, 2.0.64), or an all-zero split: the total is all 5m.
    nosplit = []
    for e in entries:
        if e["type"] == "assistant":
            u = {k: v for k, v in e["message"]["usage"].items() if k != "cache_creation"}
            e = dict(e, message={**e["message"], "usage": u})
        nosplit.append(json.dumps(e).encode())
    got = _sum(_calls(claude_transcript.parse, nosplit))
    want = _sum(base)
    assert got["cache_creation_1h"] == 0
    assert got["cache_creation_5m"] == want["cache_creation_5m"] + want["cache_creation_1h"]


def test_codex_traps(codex_run):
    lines = codex_run["rollout"].read_bytes().splitlines()
    base = _sum(_calls(codex_transcript.parse, lines))
    # Trap 1/2: every token_count written twice (Codex Desktop 0.104), and rate-limit-only events.
    doubled = []
    for ln in lines:
        doubled.append(ln)
        if b'"token_count"' in ln:
            doubled.append(ln)
            d = json.loads(ln)
            d["payload"]["info"] = None
            doubled.append(json.dumps(d).encode())
    assert _sum(_calls(codex_transcript.parse, doubled)) == base
    # Without token_usage_record lines (pre-0.17x) the same calls are found, with derived ids.
    old = [ln for ln in lines if b'"token_usage_record"' not in ln]
    assert _sum(_calls(codex_transcript.parse, old)) == base
    # Summing every snapshot's last_token_usage would have over-counted in the real file (trap 2).
    naive = sum(json.loads(ln)["payload"]["info"]["last_token_usage"]["output_tokens"] for ln in lines
                if b'"token_count"' in ln and b'"info":null' not in ln and b'"info": null' not in ln)
    assert naive >= base["output_tokens"]
