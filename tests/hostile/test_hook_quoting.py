"""Commands capsule writes into a client's config are quoted for the shell (issue 24): the Claude
Code intent hook of a state dir whose path holds a space or `$(touch …)` runs the hook (it records
the prompt) and nothing else (no file is touched). Claude Code runs a hook command through a shell."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from capsule.agents import session


@pytest.mark.parametrize("name", ["state dir", "st$(touch PWNED)ate", "a'b\"c;touch PWNED2 `touch PWNED3`"])
def test_the_intent_hook_command_survives_a_hostile_state_dir_path(tmp_path, name):
    state = tmp_path / name
    state.mkdir()
    d = session.prepare(state)
    argv = session.claude_argv(["claude", "-p", "hi"], d, state, mcp=False, intent=True, python=sys.executable)
    settings = json.loads((d / "settings.json").read_text())
    assert argv[argv.index("--settings") + 1] == str(d / "settings.json")
    (hook,) = {h["hooks"][0]["command"] for e in settings["hooks"].values() for h in e}
    event = {"hook_event_name": "UserPromptSubmit", "session_id": "s-q", "prompt": "why does checkout fail?"}
    proc = subprocess.run(["sh", "-c", hook], input=json.dumps(event), capture_output=True, text=True,
                          cwd=tmp_path, timeout=30)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert not any(p.name.startswith("PWNED") for p in tmp_path.rglob("*")), list(tmp_path.iterdir())
    records = (session.intents_dir(state) / "s-q.jsonl").read_text().splitlines()
    assert json.loads(records[0])["prompt"] == "why does checkout fail?"
