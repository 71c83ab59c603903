"""The read door driven by the real clients, offline: Claude Code's CLI and the MCP Inspector CLI.

scripts/setup-clients.sh installs both; a missing client is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from capsule import agents
from capsule.measure.tokens import count


def _client(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed; run scripts/setup-clients.sh"
    return path


def _claude_env(tmp_path, state_dir) -> dict:
    return {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "JACKIN_CTX_STATE_DIR": str(state_dir),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


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
