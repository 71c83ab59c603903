"""The user's last prompt read back from a Codex rollout (lines in Codex 0.171's format)."""

from __future__ import annotations

import json

from capsule.agents import intent_log

THREAD = "01a22fca-58e0-7132-ae55-b1003dc3e1cd"


def _line(text: str) -> str:
    return json.dumps({"timestamp": "2026-12-01T04:08:44.456Z", "type": "response_item",
                       "payload": {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": text}]}}, separators=(",", ":"))


def test_last_user_prompt_skips_codex_context_blocks(tmp_path):
    day = tmp_path / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-12-01T04-08-40-{THREAD}.jsonl").write_text("\n".join([
        _line("first question"), _line("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"),
        _line("Why does checkout drop orders?"), _line("<turn_aborted>…</turn_aborted>"), ""]))
    assert intent_log.codex_prompt(tmp_path, THREAD) == "Why does checkout drop orders?"
    assert intent_log.codex_prompt(tmp_path, "other-thread") is None
    assert intent_log.codex_prompt(tmp_path, "../../etc") is None
    assert intent_log.codex_prompt(tmp_path, None) is None
