"""`capsule statusline` for Claude Code's statusLine (issue 33): fed the JSON the client sends (its
format as its own statusline docs give it), one line with this session's savings, its cost and the
5-hour window; `up` sets it for the session when the role asks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from capsule.measure.ledger import Ledger, Row

CLI = [sys.executable, "-m", "capsule"]


def claude_json(tmp_path, sid: str, **over) -> dict:
    """Claude Code's statusLine input (the fields its docs list, with values a session has)."""
    transcript = tmp_path / f"{sid}.jsonl"
    transcript.write_text(json.dumps({"type": "user", "sessionId": sid, "timestamp": "2026-12-02T10:00:00.000Z"}) + "\n")
    data = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(tmp_path),
            "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
            "workspace": {"current_dir": str(tmp_path), "project_dir": str(tmp_path), "added_dirs": []},
            "version": "2.1.197", "output_style": {"name": "default"},
            "cost": {"total_cost_usd": 0.4213, "total_duration_ms": 61000, "total_api_duration_ms": 20000,
                     "total_lines_added": 3, "total_lines_removed": 1},
            "context_window": {"total_input_tokens": 12000, "total_output_tokens": 300, "context_window_size": 200000,
                               "current_usage": None, "used_percentage": 6, "remaining_percentage": 94},
            "rate_limits": {"five_hour": {"used_percentage": 37.4, "resets_at": int(time.time()) + 2 * 3600 + 15 * 60},
                            "seven_day": {"used_percentage": 12, "resets_at": int(time.time()) + 86400}}}
    data.update(over)
    return data


def statusline(data, state, raw: str | None = None):
    proc = subprocess.run([*CLI, "statusline"], input=raw if raw is not None else json.dumps(data),
                          capture_output=True, text=True, timeout=60, env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state)})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.count("\n") == 1
    return proc.stdout.strip()


def test_one_line_with_this_sessions_savings_cost_and_five_hour_window(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    ledger = Ledger(state / "ledger.db")
    for scope, raw, emitted in (("S1", 30_000, 5_000), ("S1", 2_000, 1_000), ("other", 9_999, 1)):
        ledger.record(Row(scope=scope, command="git log", family="git", transform="git_log", stream="stdout",
                          mode="standard", applied=True, raw_tokens=raw, emitted_tokens=emitted, raw_bytes=1,
                          emitted_bytes=1, exit_code=0, handle=None, duration_ms=1.0, token_label="cl100k_base"))
    ledger.close()
    line = statusline(claude_json(tmp_path, "S1"), state)
    assert re.fullmatch(r"capsule saved 26\.0k tok · \$0\.42 · 5h 37% \(resets in 2h1[45]\)", line), line
    # A session with no row of its own scope: every row since its transcript's first line.
    assert statusline(claude_json(tmp_path, "S2"), state).startswith("capsule saved 36.0k tok · ")
    # No ledger, no rate limits (an API-key session), bad input: capsule's part, never an error.
    bare = claude_json(tmp_path, "S3")
    del bare["rate_limits"]
    assert statusline(bare, tmp_path / "none") == "capsule: no savings yet · $0.42"
    assert statusline({}, tmp_path / "none", raw="not json") == "capsule: no savings yet"


def test_up_sets_the_statusline_for_the_session_when_the_role_asks(tmp_path, monkeypatch):
    from capsule.policy.manifest import load_role
    from capsule.supervisor.core import Options, Supervisor

    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path / "state"))
    for name, wanted in (("python-dev", True), ("default", False)):
        role = load_role(name)
        assert role.agent.statusline is wanted
        sup = Supervisor(Options(role=role, command=["claude", "-p", "hi"], session_config=True))
        sup._prepare_session("claude")
        argv = sup._session_argv(["claude", "-p", "hi"])
        settings = json.loads(open(argv[argv.index("--settings") + 1]).read())
        if wanted:
            cmd = settings["statusLine"]["command"]
            assert settings["statusLine"]["type"] == "command" and cmd.endswith(" statusline")
            assert statusline({}, tmp_path / "none") == "capsule: no savings yet"
        else:
            assert "statusLine" not in settings
