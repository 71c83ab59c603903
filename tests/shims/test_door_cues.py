"""The shell door hands the engine the task's cues its client's session holds (issue 29.3 item 2):
the user's last prompt and the session's edits, as Claude Code's intent hook recorded them; a search
with context then keeps whole the group the prompt names."""

from __future__ import annotations

import json
import subprocess
import time

from capsule.agents import limits, session
from capsule.engine import Engine
from capsule.shims import door


def test_the_shell_door_hands_in_the_prompt_and_edits(tmp_path):
    state = tmp_path / "state"
    d = session.intents_dir(state)
    d.mkdir(parents=True)
    now = time.time()
    (d / "s-9.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"kind": "prompt", "prompt": "the refund of `order_77` is charged twice", "t": now},
        {"kind": "edit", "path": "/w/pay.py", "text": "def settle():", "t": now}]) + "\n")
    meta = {limits.data()["claude"]["session_env"]: "s-9"}
    assert door.resolve_cues(state, meta) == ("the refund of `order_77` is charged twice", ("/w/pay.py\ndef settle():",))
    assert door.resolve_cues(state, None) == (None, ())
    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(40):
        (ws / f"m{k}.py").write_text("".join(
            f"def order_{k * 10 + i}(o):\n    a = 1\n    charge(o)\n    c = 3\n    d = 4\n\n\n\n\n\n"
            for i in range(10)))
    cmd = ["rg", "-n", "-C", "2", "--sort", "path", "charge", "."]
    raw = subprocess.run(cmd, cwd=ws, capture_output=True, check=True).stdout
    assert raw.count(b"\n") > 1000
    eng = Engine(state, mode="standard", scope="s-9")
    out, _ = door.observe_command(eng, " ".join(cmd), raw, b"", 0, 1.0, scope="s-9", meta=meta)
    eng.close()
    shown = out.decode().split("\n")
    want = [ln for ln in raw.decode().split("\n--\n") if "def order_77(" in ln][0].split("\n")
    start = shown.index(want[0])
    assert shown[start:start + len(want)] == want and len(out) < len(raw) // 5
