"""INV-1/INV-2 on real client traffic: the real Claude Code, plain and under `capsule up --local`,
against a fake that reports the usage the prompt cache would really report for the bytes it received
(tests/fakes/cache.py CachingMessages). The transcripts, ingested and judged by
`capsule ctx report`, show cache reads from the 2nd call on, no bust, and a read share >= 85%.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.measure import clients
from tests.fakes.cache import CachingMessages as FakeCachingAnthropic

COMMANDS = ["ls -la", "git log --stat", "git status", "echo one", "echo two", "echo three", "echo four",
            "echo five", "echo six"]


def script(body, turn):
    if "Bash" not in [t.get("name") for t in body.get("tools") or []]:
        return [{"type": "text", "text": "side answer"}]
    if turn < len(COMMANDS):
        return [{"type": "tool_use", "id": f"toolu_{turn}", "name": "Bash",
                 "input": {"command": COMMANDS[turn], "description": "step"}}]
    return [{"type": "text", "text": "done"}]


@pytest.mark.parametrize("with_capsule", [False, True], ids=["plain", "capsule"])
def test_cache_holds_on_real_traffic(workspace, tmp_path, state_dir, capsule, with_capsule):
    fake = FakeCachingAnthropic(script)
    cfg = tmp_path / "cc"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(cfg), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1",
           "JACKIN_CTX_STATE_DIR": str(state_dir), "HOME": str(tmp_path)}
    cmd = [clients.client("claude"), "-p", "go", "--allowedTools", "Bash", "--output-format", "json"]
    if with_capsule:
        cmd = [sys.executable, "-m", "capsule", "up", "--role", "python-dev", "--local", "--", *cmd]
    try:
        proc = subprocess.run(cmd, cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
    finally:
        fake.close()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    main = [e for e in fake.log if e["blocks"] != ["text"] or e["turn"] == len(COMMANDS)]
    assert len(main) == len(COMMANDS) + 1
    rep = capsule("ctx", "report", "--json", "--claude-dir", str(cfg))
    assert rep.returncode == 0, rep.stderr
    r = json.loads(rep.stdout)
    (verdict,) = r["cache"]
    assert verdict["inv1_misses"] == [] and verdict["busts"] == []
    assert verdict["cache_read_share"] >= 0.85 and verdict["share_ok"] and not verdict["alert"]
    # The transcript's figures are the fake's: the report judged what the API would have billed.
    assert r["totals"]["cache_read_input_tokens"] == sum(e["usage"]["cache_read_input_tokens"] for e in fake.log)
    if with_capsule:
        assert r["ledger"]["emissions"] >= 2 and verdict["capsule_emissions"] >= 2
