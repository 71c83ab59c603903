"""Drive the real Claude Code and Codex against the usage fakes (tests/fakes/usage.py).

scripts/setup-clients.sh installs both clients; a missing client is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

MARK = "SUBAGENT-MARK"
# The cost tests name a priced model (capsule/measure/data/prices.toml): Claude Code 2.1.332's
# default, claude-opus-5-5, is deliberately unpriced (no published page gives all five figures), so
# a run on the default has no cost to compare. test_cost keeps one run on that default, reported unpriced.
PRICED = "claude-opus-4-8"
UNPRICED_DEFAULT = "claude-opus-5-5"    # Claude Code 2.1.332's default model


def client(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed; run scripts/setup-clients.sh"
    return path


def claude_script(read_path: str):
    """Main thread: thinking+text+two parallel Bash calls in ONE response, a Read, an Agent call, done.
    The subagent: one Bash call, then done. Requests offering no Bash tool get plain text."""

    def script(body, turn):
        tools = [t.get("name") for t in body.get("tools") or []]
        if "Bash" not in tools:
            return [{"type": "text", "text": "side answer"}]
        first = json.dumps(body.get("messages", [])[:1])
        if MARK in first:
            if turn == 0:
                return [{"type": "tool_use", "id": "toolu_sub0", "name": "Bash",
                         "input": {"command": "echo sub", "description": "sub"}}]
            return [{"type": "text", "text": "subagent done"}]
        # the user's last message (2.1.332 may end a request with a role:system entry, its token budget)
        last = json.dumps([m for m in body.get("messages", []) if m.get("role") == "user"][-1:])
        if "again please" in last:
            return [{"type": "tool_use", "id": f"toolu_again{turn}", "name": "Bash",
                     "input": {"command": "echo alpha", "description": "again"}}]
        if turn == 0:
            return [{"type": "thinking", "thinking": "two commands at once"}, {"type": "text", "text": "Running."},
                    {"type": "tool_use", "id": "toolu_a", "name": "Bash",
                     "input": {"command": "echo alpha", "description": "a"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "Bash",
                     "input": {"command": "echo beta", "description": "b"}}]
        if turn == 1:
            return [{"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": read_path}}]
        if turn == 2:
            return [{"type": "tool_use", "id": "toolu_g", "name": "Agent",
                     "input": {"description": "sub", "prompt": f"{MARK} do it", "subagent_type": "general-purpose"}}]
        return [{"type": "text", "text": "done"}]

    return script


def run_claude(fake, cwd: Path, config_dir: Path, *args: str, extra_env: dict | None = None,
               model: str = PRICED) -> dict:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_dir), "ANTHROPIC_BASE_URL": fake.url,
           "ANTHROPIC_API_KEY": "test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "IS_SANDBOX": "1", **(extra_env or {})}
    proc = subprocess.run([client("claude"), "-p", *args, "--model", model, "--allowedTools", "Bash,Read,Agent",
                           "--output-format", "json"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)


def codex_script():
    def fc(i, cmd):
        return {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "exec_command",
                "arguments": json.dumps({"cmd": cmd}), "status": "completed"}

    def msg(text):
        return {"type": "message", "role": "assistant", "id": "msg_x",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    def script(body, done):
        if "CONTEXT CHECKPOINT COMPACTION" in json.dumps(body):
            return [msg("summary of work")]
        if done == 0:
            return [fc(0, "echo alpha"), fc(1, "echo beta")]   # parallel calls in one response
        if done == 2:
            return [fc(2, "cat f.txt")]
        return [msg("done")]

    return script


def codex_over_limit(body, done) -> bool:
    """The call after the file read reports a context over the compact limit (once)."""
    return done == 3 and "summary of work" not in json.dumps(body)


def run_codex(fake, cwd: Path, home: Path, *args: str, features: tuple[str, ...] = ()) -> None:
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": "test"}
    flags = [f for feature in features for f in ("--enable", feature)]
    proc = subprocess.run([client("codex"), "exec", *flags, "--skip-git-repo-check",
                           "--dangerously-bypass-approvals-and-sandbox", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def make_workspace(ws):
    """300 files and a 40-commit git history: outputs capsule shrinks (ls -la, git log --stat)."""
    ws.mkdir()
    for i in range(300):
        (ws / f"file_{i:03d}.txt").write_text("x" * i)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    for i in range(40):
        (ws / f"f_{i % 7}.txt").write_text(f"{i}\n")
        subprocess.run(git + ["add", "-A"], cwd=ws, check=True)
        subprocess.run(git + ["commit", "-qm", f"change {i}"], cwd=ws, check=True)
    return ws
