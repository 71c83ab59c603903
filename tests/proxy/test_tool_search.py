"""Claude Code 2.1.197 turns its tool search off for any ANTHROPIC_BASE_URL that is not first-party
(2.1.332 keeps it on), so a
proxy in front of api.anthropic.com would make it inline every MCP schema (and its deferred built-in
tools) into every request. capsule's redirect turns it back on where the upstream is first-party and
the user said nothing; the real client's first request shows what that saves."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from capsule.proxy import redirect as redirects
from tests.fakes.anthropic import MessagesAPI
from tests.measure import clients


def env_for(user: dict) -> dict:
    return redirects.redirect(redirects.upstream("claude", user), "http://127.0.0.1:9", "http://127.0.0.1:9/openai").env


def test_the_redirect_keeps_tool_search_on_for_a_first_party_upstream():
    assert env_for({}) == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ENABLE_TOOL_SEARCH": "true"}
    assert env_for({"ANTHROPIC_BASE_URL": "https://api.anthropic.com/"})["ENABLE_TOOL_SEARCH"] == "true"
    assert "ENABLE_TOOL_SEARCH" not in env_for({"ENABLE_TOOL_SEARCH": "false"})            # theirs wins
    assert "ENABLE_TOOL_SEARCH" not in env_for({"ANTHROPIC_BASE_URL": "https://gateway.example"})   # not ours to say


def test_the_real_client_inlines_mcp_schemas_without_it(tmp_path):
    cfg = {"mcpServers": {"capsule": {"type": "stdio", "command": sys.executable,
                                      "args": ["-m", "capsule", "mcp", "serve", "--root", str(tmp_path)],
                                      "env": {"JACKIN_CTX_STATE_DIR": str(tmp_path / "state")}}}}
    (tmp_path / "mcp.json").write_text(json.dumps(cfg))
    first = {}
    for search in (None, "true", "false"):
        fake = MessagesAPI(lambda body, turn: [{"type": "text", "text": "done"}])
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "HOME": str(tmp_path),
               "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test", "IS_SANDBOX": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "MCP_CONNECTION_NONBLOCKING": "0",
               **({"ENABLE_TOOL_SEARCH": search} if search else {})}
        try:
            proc = subprocess.run([clients.client("claude"), "-p", "hi", "--mcp-config", str(tmp_path / "mcp.json"),
                                   "--strict-mcp-config", "--allowedTools", "mcp__capsule"], env=env, cwd=tmp_path,
                                  capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, proc.stderr[-2000:]
        finally:
            fake.close()
        body = fake.requests[0]
        first[search] = (len(json.dumps(body)), [t.get("name") for t in body.get("tools") or []])
    (inlined, names), (searched, names_ts) = first["false"], first["true"]
    assert {"mcp__capsule__ctx_read", "mcp__capsule__ctx_expand"} <= set(names)        # every schema, every turn
    # unset: 2.1.197 inlines them for a base URL that is not first-party (what the redirect's "true"
    # is for); 2.1.332 searches for any base URL
    assert first[None][1] in (names, names_ts), first[None][1]
    assert not any(n.startswith("mcp__") for n in names_ts) and "ToolSearch" in names_ts
    assert searched < 0.8 * inlined, (searched, inlined)
