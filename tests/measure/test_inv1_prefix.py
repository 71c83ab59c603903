"""INV-1: capsule never changes bytes already sent. The real Claude Code, with and without capsule
(`capsule up --local`: shims, MCP read door, proxy when on), against a fake Messages API that keeps
each request's raw body: every request's tools and system are the previous request's bytes, and its
messages start with the previous request's messages byte for byte (cache_control markers, which
Claude Code moves to the newest message and which are not part of the cached prefix, and its
one-text-block or plain-string form of the same message, set aside).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.measure import clients
from tests.fakes.usage import DistinctMessages as FakeAnthropic

CACHE_MARK = re.compile(r',"cache_control":\{"type":"ephemeral"(?:,"ttl":"[0-9a-z]+")?\}')
# Claude Code sends a message as one text block in one request and as a plain string in the next
# (2.1.332: its role:system environment message, the block carrying the marker); the same text
ONE_BLOCK = re.compile(r'"content":\[\{"type":"text","text":("(?:[^"\\]|\\.)*")\}\]')


def prefix_text(messages: str) -> str:
    return ONE_BLOCK.sub(r'"content":\1', CACHE_MARK.sub("", messages))


def members(raw: bytes) -> dict[str, str]:
    """Top-level members of a JSON object body as their exact source text."""
    s, dec, out = raw.decode(), json.JSONDecoder(), {}
    i = s.index("{") + 1
    while True:
        while s[i] in " \n\r\t,":
            i += 1
        if s[i] == "}":
            return out
        key, i = dec.raw_decode(s, i)
        while s[i] in " :":
            i += 1
        _, end = dec.raw_decode(s, i)
        out[key] = s[i:end]
        i = end


def script(body, turn):
    if "Bash" not in [t.get("name") for t in body.get("tools") or []]:
        return [{"type": "text", "text": "side answer"}]
    if turn == 0:
        return [{"type": "tool_use", "id": "toolu_0", "name": "Bash", "input": {"command": "ls -la", "description": "l"}}]
    if turn == 1:
        return [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                 "input": {"command": "git log --stat", "description": "g"}}]
    return [{"type": "text", "text": "done"}]


def run(workspace, tmp_path, with_capsule: bool) -> list[bytes]:
    fake = FakeAnthropic(script)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "ANTHROPIC_BASE_URL": fake.url,
           "ANTHROPIC_API_KEY": "test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "IS_SANDBOX": "1", "JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
    cmd = [clients.client("claude"), "-p", "go", "--allowedTools", "Bash", "--output-format", "json"]
    if with_capsule:
        cmd = [sys.executable, "-m", "capsule", "up", "--role", "python-dev", "--local", "--", *cmd]
    try:
        proc = subprocess.run(cmd, cwd=workspace, env=env, capture_output=True, text=True, timeout=240,
                              stdin=subprocess.DEVNULL)
    finally:
        fake.close()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [b for b in fake.raw_bodies if b'"name":"Bash"' in b]


@pytest.mark.parametrize("with_capsule", [False, True], ids=["plain", "capsule"])
def test_every_request_extends_the_previous_bytes(workspace, tmp_path, with_capsule):
    bodies = run(workspace, tmp_path, with_capsule)
    assert len(bodies) == 3
    parts = [members(b) for b in bodies]
    for before, after in zip(parts, parts[1:]):
        assert after["tools"] == before["tools"]
        assert after["system"] == before["system"]
        old, new = prefix_text(before["messages"]), prefix_text(after["messages"])
        assert new.startswith(old[:-1]) and len(new) > len(old)
    # capsule really changed what the model saw (else the test proves nothing about it), and its
    # read door was offered from the first request on (the supervisor makes Claude Code wait for it).
    assert (b"<<ccr:" in bodies[-1]) is with_capsule
    # (a definition, or 2.1.332's deferred-tools list naming it)
    assert all((b"mcp__capsule__ctx_read" in b) is with_capsule for b in bodies)
