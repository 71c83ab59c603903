"""The supervisor starts its agent as soon as its socket answers, while its engine still warms
(core.py): the agent's very first shell call, made the moment it starts, waits for the engine and is
served (shrunk, with its handle), not passed raw."""

from __future__ import annotations

import os
import subprocess
import sys

from capsule import shims


def test_the_agents_first_call_at_start_is_served(tmp_path):
    state = tmp_path / "state"
    shim_dir = tmp_path / "shims"
    shims.install(shim_dir, socket=str(state / "engine.sock"))
    log = tmp_path / "big.log"
    log.write_text("".join(f"worker {i % 4}: processed batch {i} of the nightly import\n" for i in range(4000)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JACKIN_CTX_", "CLAUDECODE", "CODEX_"))}
    env.update(JACKIN_CTX_STATE_DIR=str(state), PATH=f"/usr/bin:/bin")
    # A shell agent: its view is the stdout it was launched with; its first act is `cat` through the shim.
    done = subprocess.run([sys.executable, "-m", "capsule", "supervise", "--role", "python-dev",
                           "--shim-dir", str(shim_dir), "--", "sh", "-c", f"cat {log}"],
                          env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout) < len(log.read_bytes()) // 4, done.stdout[-500:]
    assert b"capsule ctx expand '<<ccr:" in done.stdout
    text = (state / "capsule.log").read_text()
    assert "agent pid" in text and "engine warm" in text
