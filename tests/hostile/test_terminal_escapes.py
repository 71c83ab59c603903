"""Text capsule prints to a terminal has control characters made visible (issue 24): an OSC title
and ESC[8m concealed text in a ledger command (`ctx gain --emissions`), and in transcript fields
(`ctx usage`, `ctx report`), come out as `\\e]0;…` and `\\e[8m`, never as live escapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

EVIL = "\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m\u202e"
LINES = "".join(f"line {i} of a long listing\n" for i in range(3000)).encode()


def _run(state, *args, input=None, env=None):
    return subprocess.run([sys.executable, "-m", "capsule", *args], input=input, capture_output=True, timeout=120,
                          env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state), **(env or {})})


def _clean(out: bytes) -> str:
    text = out.decode()
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text[-1500:]
    return text


def test_gain_shows_a_hostile_command_escaped(tmp_path):
    state = tmp_path / "state"
    assert _run(state, "ctx", "pipe", "--cmd", f"ls {EVIL}", input=LINES).returncode == 0
    proc = _run(state, "ctx", "gain", "--emissions", "5")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "\\e]0;pwned\\x07\\e[8mhidden" in _clean(proc.stdout)


def test_usage_and_report_show_hostile_transcript_fields_escaped(tmp_path):
    home = tmp_path / "claude"
    d = home / "projects" / "-w"
    d.mkdir(parents=True)
    entries = [{"type": "user", "sessionId": "s-1", "timestamp": "2026-01-01T00:00:00Z", "cwd": f"/w/{EVIL}",
                "message": {"role": "user", "content": "hi"}},
               {"type": "assistant", "sessionId": "s-1", "timestamp": "2026-01-01T00:00:01Z", "cwd": f"/w/{EVIL}",
                "message": {"id": "msg_1", "model": f"claude-sonnet-4-5{EVIL}", "role": "assistant",
                            "content": [{"type": "tool_use", "id": "t1", "name": f"Bash{EVIL}",
                                         "input": {"command": f"ls {EVIL}"}}],
                            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}}]
    (d / "s-1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    env = {"CLAUDE_CONFIG_DIR": str(home)}
    for args in (("ctx", "usage"), ("ctx", "report")):
        proc = _run(tmp_path / "state", *args, env=env)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        text = _clean(proc.stdout)
        assert "\\e" in text or "s-1" in text
