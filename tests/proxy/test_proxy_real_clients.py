"""The proxy door driven by the real Claude Code and the real Codex, offline, against recording fake upstreams.

Each client runs a scripted multi-turn session (native file reads and shell commands) through
`capsule proxy`; the tests check what the fake model API received: tool results shrunk with every
error line kept, each request's prefix byte-identical to the previous request's, usage rows equal to
the fake's, the client's final answer intact, and the API key in no file capsule wrote.
scripts/setup-clients.sh installs the clients; a missing client is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from capsule.measure.usage import UsageStore
from capsule.proxy import rewrite
from recording import ANTHROPIC_USAGE, OPENAI_USAGE, ScriptedMessages, ScriptedResponses

KEY = "sk-test-PROXY-SECRET-4f9a1c"
ERRORS = ["2026-03-01 10:04:00 ERROR payment-worker 17 failed: card declined (code 402)",
          "2026-03-01 10:09:30 ERROR payment-worker 31 failed: timeout after 30s"]


def _client(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed; run scripts/setup-clients.sh"
    return path


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [f"2026-03-01 10:{i // 60:02d}:{i % 60:02d} INFO payment-worker {i} settled batch {i * 7} ok"
             for i in range(600)]
    lines[240], lines[570] = ERRORS
    (ws / "service.log").write_text("\n".join(lines) + "\n")
    (ws / "report.py").write_text(
        "for i in range(500):\n"
        "    print(f'checked record {i}: status ok, latency {i % 17} ms')\n"
        "    if i == 321:\n"
        "        print('Traceback (most recent call last):\\nValueError: record 321 has a negative amount')\n")
    return ws


def _usage(state_dir) -> list[tuple]:
    store = UsageStore(state_dir / "usage.db")
    try:
        return store.conn.execute("SELECT agent, call_id, session_id, input_tokens, cache_read_input_tokens, "
                                  "cache_creation_5m, cache_creation_1h, output_tokens, source FROM calls").fetchall()
    finally:
        store.close()


def _no_key_in(state_dir) -> None:
    for f in state_dir.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f"API key written to {f}"


def _strip_cache_control(value):
    """Two things Claude Code itself changes between turns (a direct connection shows the same): it moves
    its cache_control markers, and it sends a user message (2.1.332: its role:system environment message
    too) as text blocks in one request and as a plain string in the next. Neither is content; both are
    normalised before comparing."""
    if isinstance(value, dict):
        if isinstance(value.get("content"), str) and value.get("role") in ("user", "system"):
            value = {**value, "content": [{"type": "text", "text": value["content"]}]}
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


def _assert_prefixes(bodies: list[dict], key: str, least: int = 3) -> None:
    """Request n+1 starts with exactly what request n sent (message by message, as bytes)."""
    assert len(bodies) >= least
    for before, after in zip(bodies, bodies[1:]):
        prev = [json.dumps(_strip_cache_control(m), sort_keys=True) for m in before[key]]
        nxt = [json.dumps(_strip_cache_control(m), sort_keys=True) for m in after[key]]
        assert nxt[:len(prev)] == prev


def _results(body: dict) -> dict[str, str]:
    out = {}
    for m in body["messages"]:
        for b in m["content"] if isinstance(m.get("content"), list) else []:
            if b.get("type") == "tool_result":
                c = b["content"]
                out[b["tool_use_id"]] = c if isinstance(c, str) else "\n".join(i.get("text", "") for i in c)
    return out


def _run_claude(ws, tmp_path, url, prompt, *extra):
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "HOME": str(tmp_path),
           "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": KEY, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1"}
    proc = subprocess.run([_client("claude"), "-p", prompt, "--allowedTools", "Read,Bash", "--output-format", "json",
                           *extra], cwd=ws, env=env, capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_claude_code_session_through_the_proxy(workspace, tmp_path, state_dir, proxy_for):
    fake = ScriptedMessages([("Read", {"file_path": str(workspace / "service.log")}),
                             ("Bash", {"command": "python3 report.py", "description": "run the report"}),
                             ("Read", {"file_path": str(workspace / "report.py")})])
    try:
        proxy = proxy_for(anthropic=fake.url)
        out = _run_claude(workspace, tmp_path, proxy.url, "find the failures")
        assert out["result"] == fake.final                       # the streamed answer arrives whole
        bodies = [json.loads(b) for b in fake.conversation()]
        results = _results(bodies[-1])
        raw_log = (workspace / "service.log").read_text()
        log_result = results["toolu_00"]
        assert "<<ccr:" in log_result and len(log_result) < len(raw_log) / 4
        for line in ERRORS:
            assert line in log_result
        report = results["toolu_01"]
        assert "ValueError: record 321 has a negative amount" in report and "<<ccr:" in report
        _assert_prefixes(bodies, "messages")
        # The request before any rewrite is the client's own bytes; writing it back gives those very
        # bytes, so the first rewritten request changes no earlier byte of the conversation.
        first = fake.conversation()[0]
        assert rewrite.serialize(rewrite.parse(first)) == first
        for b in bodies[1:]:
            assert json.dumps(b["tools"]) == json.dumps(bodies[0]["tools"])
            assert json.dumps(b.get("system")) == json.dumps(bodies[0].get("system"))
        rows = _usage(state_dir)
        assert len(rows) == len(fake.raw) >= 4
        expected = (ANTHROPIC_USAGE["input_tokens"], ANTHROPIC_USAGE["cache_read_input_tokens"],
                    ANTHROPIC_USAGE["cache_creation_input_tokens"], 0, ANTHROPIC_USAGE["output_tokens"], "proxy")
        assert all(r[3:] == expected and r[0] == "claude" for r in rows)
        assert {r[2] for r in rows} == {out["session_id"]}
        assert all(h.get("x-api-key") == KEY for _, h, _ in fake.raw)

        # A restarted proxy and a resumed session: the history is re-sent raw by the client, and the
        # upstream sees the very bytes it saw before (memo in the state dir), then new turns appended.
        proxy.stop()
        again = proxy_for(anthropic=fake.url)
        fake.calls = fake.calls + [("Read", {"file_path": str(workspace / "service.log"), "offset": 1, "limit": 400})]
        before = len(fake.conversation())
        out2 = _run_claude(workspace, tmp_path, again.url, "once more", "--resume", out["session_id"])
        assert out2["result"] == fake.final
        resumed = [json.loads(b) for b in fake.conversation()[before:]]
        assert _results(resumed[0])["toolu_00"] == log_result
        assert _results(resumed[0])["toolu_01"] == report
        _assert_prefixes(resumed, "messages", least=2)

        # Compaction: the summarising request carries the history with the same bytes; what follows is
        # a new, shorter prefix that later requests extend (a new prefix, never a mutation).
        before = len(fake.conversation())
        _run_claude(workspace, tmp_path, again.url, "/compact", "--resume", out["session_id"])
        summarising = json.loads(fake.conversation()[before])
        assert _results(summarising)["toolu_00"] == log_result
        _run_claude(workspace, tmp_path, again.url, "continue", "--resume", out["session_id"])
        # (2.1.332 asks for the summary again, a stricter instruction in the last message, when the
        # answer had no <summary> block, as the fake's has not: a retry of the summarising request)
        def retry(b: dict) -> bool:
            return _strip_cache_control(b["messages"][:-1]) == _strip_cache_control(summarising["messages"][:-1])
        after = [b for b in map(json.loads, fake.conversation()[before + 1:]) if not retry(b)]
        assert len(after[0]["messages"]) < len(summarising["messages"])
        _assert_prefixes(after, "messages", least=2)
        _no_key_in(state_dir)
    finally:
        fake.close()


def test_codex_session_through_the_proxy(workspace, tmp_path, state_dir, proxy_for):
    fake = ScriptedResponses([("exec_command", {"cmd": "cat service.log"}),
                              ("exec_command", {"cmd": "python3 report.py"}),
                              ("exec_command", {"cmd": "wc -l service.log"})])
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(fake.provider_config())
    try:
        proxy = proxy_for(openai=fake.base_url)
        env = {**os.environ, "CODEX_HOME": str(home), "HOME": str(tmp_path), "OPENAI_API_KEY": KEY}
        proc = subprocess.run([_client("codex"), "-c", f'model_providers.fake.base_url="{proxy.openai_url}"', "exec",
                               "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-m", "gpt-5.5",
                               "find the failures"], cwd=workspace, env=env, capture_output=True, text=True,
                              timeout=240, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert fake.final in proc.stdout
        bodies = [json.loads(b) for b in fake.conversation()]
        outputs = {i["call_id"]: i["output"] for i in bodies[-1]["input"] if i.get("type") == "function_call_output"}
        outputs = {k: v if isinstance(v, str) else json.dumps(v) for k, v in outputs.items()}
        log_out = outputs["call_00"]
        assert "<<ccr:" in log_out and len(log_out) < len((workspace / "service.log").read_text()) / 4
        for line in ERRORS:
            assert line in log_out
        assert "ValueError: record 321 has a negative amount" in outputs["call_01"]
        _assert_prefixes(bodies, "input")
        first = fake.conversation()[0]
        assert rewrite.serialize(rewrite.parse(first)) == first
        rows = _usage(state_dir)
        assert len(rows) == len(fake.raw) >= 4
        cached = OPENAI_USAGE["input_tokens_details"]["cached_tokens"]
        expected = (OPENAI_USAGE["input_tokens"] - cached, cached, 0, 0, OPENAI_USAGE["output_tokens"], "proxy")
        assert all(r[3:] == expected and r[0] == "codex" for r in rows)
        assert len({r[2] for r in rows}) == 1 and bodies[0].get("prompt_cache_key") == rows[0][2]
        assert all(h.get("Authorization", h.get("authorization")) == f"Bearer {KEY}" for _, h, _ in fake.raw)
        _no_key_in(state_dir)
        _no_key_in(home / "sessions") if (home / "sessions").exists() else None
    finally:
        fake.close()
