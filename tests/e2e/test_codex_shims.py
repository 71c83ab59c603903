"""Codex works by default (issue 9.4): the real Codex under `capsule up --local`, driven by a
scripted fake Responses API, runs its shell calls through capsule's shims (its tool shell's PATH
comes from a login-shell snapshot that /etc/profile resets; capsule-env.sh as BASH_ENV puts the
shims back), and the registered MCP server expands the handle the shim just printed.
"""

from __future__ import annotations

import json
import re

from tests.e2e import harness as h

HANDLE = re.compile(r"'(<<ccr:[0-9a-f]{24}>>)'")
LOG = "git log --stat -15"
# A program inside the same call capturing git: it must get git's own bytes (issue 9.1).
CAPTURE = ("python3 -c \"import subprocess; "
           "print('captured', len(subprocess.run(['git', 'log', '--stat', '-15'], capture_output=True).stdout))\"")


class ShellThenExpand(h.FakeCodexModel):
    """Call 1: a capture, then `git log`, through exec_command. Call 2: mcp__capsule ctx_expand of the footer's handle."""

    def _item(self, body: dict) -> dict:
        outs = self.outputs_in(body)
        if not outs:
            return {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "exec_command",
                    "arguments": json.dumps({"cmd": f"{CAPTURE}; {LOG}"}), "status": "completed"}
        if len(outs) == 1:
            m = HANDLE.search(_text(outs[0]))
            handle = m.group(1) if m else "<<ccr:" + "0" * 24 + ">>"
            return {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ctx_expand",
                    "namespace": "mcp__capsule", "arguments": json.dumps({"handle": handle}), "status": "completed"}
        return {"type": "message", "role": "assistant", "id": "msg_done",
                "content": [{"type": "output_text", "text": "done", "annotations": []}]}


def _text(item: dict) -> str:
    o = item.get("output")
    return o if isinstance(o, str) else "\n".join(p.get("text", "") for p in o or [])


def test_codex_shell_calls_go_through_the_shims_and_ctx_expand_finds_the_handle(tmp_path, monkeypatch):
    ws = tmp_path / "shop"
    ws.mkdir()
    head = h.build_workspace(ws)
    monkeypatch.setattr(h, "FakeCodexModel", ShellThenExpand)
    # A state dir the MCP server could not guess from HOME: only the pinned one finds the handle.
    session = h.run_codex(ws, tmp_path / "home", "capsule", head, calls=(h.CALLS[1], h.CALLS[1]),
                          extra_env={"JACKIN_CTX_STATE_DIR": str(tmp_path / "session-state")})
    raw = h._git(ws, *LOG.split()[1:])
    shown, expanded = session.results[0], session.results[1]
    assert HANDLE.search(shown), f"the shim did not run in Codex's shell:\n{shown[-1500:]}"
    assert h.count(shown) < h.count(raw)
    assert f"captured {len(raw.encode())}" in shown, shown[:300]
    assert "no archived output" not in expanded, expanded[-500:]
    assert raw.strip() in expanded, expanded[-800:]
