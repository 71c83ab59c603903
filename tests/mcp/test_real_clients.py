"""The read door driven by the real clients, offline: Claude Code's CLI and the MCP Inspector CLI.

scripts/setup-clients.sh installs both; a missing client is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from capsule import agents
from capsule.ground.tokens import count
from tests.fakes.anthropic import (SEARCH_ID, TOOL_SEARCH, MessagesAPI, ToolCalls, deferred, result_text,
                                   tool_results_in)
from tests.fakes.openai import FunctionCalls

READ = "mcp__capsule__ctx_read"


def _client(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed; run scripts/setup-clients.sh"
    return path


def _claude_env(tmp_path, state_dir) -> dict:
    return {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "JACKIN_CTX_STATE_DIR": str(state_dir),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}



def _run_claude(workspace, tmp_path, state_dir, fake, prompt: str, tools: str):
    """Register capsule, then run the real Claude Code once against the local fake Messages API."""
    env = {**_claude_env(tmp_path, state_dir), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test",
           "MCP_CONNECTION_NONBLOCKING": "0"}
    agents.register("claude", project=workspace, env=env, note=False)
    proc = subprocess.run([_client("claude"), "-p", prompt, "--allowedTools", tools, "--output-format", "json"],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc

def _claude(args, cwd, env) -> str:
    proc = subprocess.run([_client("claude"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    return proc.stdout + proc.stderr


def test_claude_code_user_scope_reports_connected(workspace, state_dir, tmp_path):
    env = _claude_env(tmp_path, state_dir)
    agents.register("claude", scope="user", project=workspace, env=env)
    out = _claude(["mcp", "list"], workspace, env)
    line = next((ln for ln in out.splitlines() if ln.startswith("capsule:")), out)
    assert "Connected" in line, out


def test_claude_code_project_scope_needs_and_gets_approval(workspace, state_dir, tmp_path):
    env = _claude_env(tmp_path, state_dir)
    cfg = tmp_path / "claude-config" / ".claude.json"
    cfg.parent.mkdir()
    # What a person does once by accepting Claude Code's folder-trust dialog (capsule never does it).
    cfg.write_text(json.dumps({"projects": {str(workspace): {"hasTrustDialogAccepted": True}}}))
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {}}))
    assert "Connected" not in _claude(["mcp", "list"], workspace, env)
    agents.register("claude", scope="project", project=workspace, env=env, note=False)
    out = _claude(["mcp", "list"], workspace, env)
    assert "capsule:" in out and "Connected" in out, out
    assert "Pending" not in out


def _inspector(workspace, state_dir, *args) -> dict:
    proc = subprocess.run(
        [_client("mcp-inspector"), "--cli", sys.executable, "-m", "capsule", "mcp", "serve", "--root", str(workspace),
         *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_inspector_tools_list_is_plain_and_small(workspace, state_dir):
    listing = _inspector(workspace, state_dir, "--method", "tools/list")
    assert sorted(t["name"] for t in listing["tools"]) == ["ctx_doc", "ctx_expand", "ctx_read", "ctx_search"]
    assert all("outputSchema" not in t for t in listing["tools"])
    assert count(json.dumps(listing)) <= 1500


def test_inspector_tools_call_ok_and_error(workspace, state_dir):
    ok = _inspector(workspace, state_dir, "--method", "tools/call", "--tool-name", "ctx_read",
                    "--tool-arg", "path=pkg/big.py")
    assert ok.get("isError") is False
    text = ok["content"][0]["text"]
    assert "def function_0(alpha, beta):" in text and "x5 = alpha" not in text   # signatures by default
    bad = _inspector(workspace, state_dir, "--method", "tools/call", "--tool-name", "ctx_read",
                     "--tool-arg", "path=../outside.txt")
    assert bad.get("isError") is True and "outside the workspace" in bad["content"][0]["text"]
    hits = _inspector(workspace, state_dir, "--method", "tools/call", "--tool-name", "ctx_search",
                      "--tool-arg", "query=TokenParser")
    assert hits.get("isError") is False and hits["content"][0]["text"].startswith("pkg/parser.py:1:")


def _result_text(result: dict) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


def test_claude_code_end_to_end_model_sees_plain_text_then_a_stub(workspace, state_dir, tmp_path):
    """Claude Code, driven by a local fake of the Messages API, calls ctx_read twice in one conversation."""
    fake = ToolCalls([(READ, {"path": "README.md", "mode": "full"}), (READ, {"path": "README.md", "mode": "full"}),
                      (READ, {"path": "pkg/big.py"})])
    try:
        _run_claude(workspace, tmp_path, state_dir, fake, "read the readme twice", "mcp__capsule")
        results = fake.tool_results()
        assert len(results) == 3, json.dumps(fake.requests)[-3000:]
        first, second, big = (_result_text(r) for r in results)
        assert first == (workspace / "README.md").read_text()           # plain text, no {"result": …} wrapper
        assert "unchanged since you read it" in second and count(second) <= 20
        assert "def function_0(alpha, beta):" in big and "x5 = alpha" not in big
        assert not any(r.get("is_error") for r in results)
        # all four offered: as definitions (2.1.197) or by name behind ToolSearch (2.1.332 defers MCP
        # tools and sends the definition of the one the model loads)
        assert sorted(fake.offered_names()) == ["mcp__capsule__ctx_doc", "mcp__capsule__ctx_expand",
                                                "mcp__capsule__ctx_read", "mcp__capsule__ctx_search"]
        offered = fake.offered_tools()
        assert "mcp__capsule__ctx_read" in {t["name"] for t in offered}
        assert count(json.dumps(offered)) <= 1500
    finally:
        fake.close()


def test_codex_accepts_the_registered_table(workspace, tmp_path):
    env = {**os.environ, "CODEX_HOME": str(tmp_path / "codex-home")}
    (tmp_path / "codex-home").mkdir()
    (tmp_path / "codex-home" / "config.toml").write_text('check_for_update_on_startup = false\n')
    agents.register("codex", project=workspace, env=env)
    proc = subprocess.run([_client("codex"), "mcp", "get", "capsule"], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "enabled: true" in proc.stdout and "default_tools_approval_mode: approve" in proc.stdout
    assert "mcp serve" in proc.stdout


def _output_text(item: dict) -> str:
    out = item["output"]
    return out if isinstance(out, str) else "\n".join(p.get("text", "") for p in out)


def test_codex_end_to_end_calls_the_registered_server(workspace, state_dir, tmp_path):
    """Codex exec, driven by a local fake of the Responses API, calls ctx_read twice through our table."""
    fake = FunctionCalls([("ctx_read", {"path": "README.md", "mode": "full"}),
                          ("ctx_read", {"path": "README.md", "mode": "full"})], namespace="mcp__capsule")
    try:
        home = tmp_path / "codex-home"
        home.mkdir()
        (home / "config.toml").write_text(fake.provider_config())
        env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": "test", "JACKIN_CTX_STATE_DIR": str(state_dir)}
        agents.register("codex", project=workspace, env=env, note=False)
        proc = subprocess.run([_client("codex"), "exec", "--skip-git-repo-check",
                               "--dangerously-bypass-approvals-and-sandbox", "read the readme twice"],
                              cwd=workspace, env=env, capture_output=True, text=True, timeout=240,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        outputs = [_output_text(o) for o in fake.outputs()]
        assert len(outputs) == 2, proc.stderr[-2000:]
        readme = (workspace / "README.md").read_text()
        assert readme in outputs[0] and '{"result"' not in outputs[0]
        assert "unchanged since you read it" in outputs[1] and readme not in outputs[1]
    finally:
        fake.close()


def test_claude_code_compaction_purges_the_read_stubs(workspace, state_dir, tmp_path):
    """The PreCompact hook written at registration runs `capsule mcp forget` in the real client."""
    from capsule.store.stubs import StubStore

    fake = ToolCalls([(READ, {"path": "README.md", "mode": "full"})])
    try:
        env = {**_claude_env(tmp_path, state_dir), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test",
               "MCP_CONNECTION_NONBLOCKING": "0"}
        agents.register("claude", project=workspace, env=env, note=False)

        def claude(*args):
            proc = subprocess.run([_client("claude"), "-p", *args, "--output-format", "json"], cwd=workspace, env=env,
                                  capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
            return json.loads(proc.stdout)

        session = claude("read the readme", "--allowedTools", "mcp__capsule")["session_id"]
        assert len(StubStore().scopes()) == 1
        claude("/compact", "--resume", session)
        assert StubStore().scopes() == []
    finally:
        fake.close()


def test_claude_code_subagent_gets_full_text_not_the_parents_stub(workspace, state_dir, tmp_path):
    """Peer failure: a subagent shares the parent's MCP connection but never saw the parent's read."""
    fake = WithSubagent({"path": "README.md", "mode": "full"})
    try:
        _run_claude(workspace, tmp_path, state_dir, fake, "go", "mcp__capsule,Agent")
        got = fake.results_by_id()
        readme = (workspace / "README.md").read_text()
        assert got.get("toolu_main_0") == readme, got
        assert got.get("toolu_sub_0") == readme, got                  # the subagent never saw it: full
        assert "unchanged since you read it" in got.get("toolu_sub_1", ""), got
        assert "unchanged since you read it" in got.get("toolu_main_2", ""), got
    finally:
        fake.close()


class WithSubagent(MessagesAPI):
    """Main conversation: read, spawn a subagent (Agent tool), read again. Subagent: read twice."""

    MARK = "SUBAGENT-MARK"

    def __init__(self, read_input: dict):
        super().__init__()
        self.read_input = read_input

    def answer(self, body: dict) -> list[dict]:
        msgs = body.get("messages", [])
        first = json.dumps(msgs[0]) if msgs else ""
        results = tool_results_in(body)
        searched = [r for r in results if r["tool_use_id"].startswith(SEARCH_ID)]
        done = len(results) - len(searched)
        offered = {t.get("name") for t in body.get("tools") or []}
        who = "sub" if self.MARK in first else "main"
        if READ not in offered and TOOL_SEARCH in offered and not searched and deferred(body, READ):
            # 2.1.332 defers MCP tools: load ctx_read through ToolSearch first, as a model does
            return [{"type": "tool_use", "id": f"{SEARCH_ID}{who}", "name": TOOL_SEARCH,
                     "input": {"query": f"select:{READ}", "max_results": 1}}]
        if READ not in offered:
            return [{"type": "text", "text": "ok"}]
        read = {"type": "tool_use", "name": READ, "input": self.read_input}
        if self.MARK in first:
            if done < 2:
                return [{**read, "id": f"toolu_sub_{done}"}]
            return [{"type": "text", "text": "subagent done"}]
        if done == 0:
            return [{**read, "id": "toolu_main_0"}]
        if done == 1:
            return [{"type": "tool_use", "id": "toolu_main_1", "name": "Agent",
                     "input": {"description": "read the readme", "prompt": f"{self.MARK}: read the readme",
                               "subagent_type": "general-purpose"}}]
        if done == 2:
            return [{**read, "id": "toolu_main_2"}]
        return [{"type": "text", "text": "done"}]

    def results_by_id(self) -> dict[str, str]:
        return {r["tool_use_id"]: result_text(r) for body in self.requests for r in tool_results_in(body)}
