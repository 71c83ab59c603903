"""Killing a live `ctx run` as an OOM killer would: SIGKILL to the run, then to the process groups
its children lead (without a terminal the command leads its own group, which would live on)."""

from __future__ import annotations

import os
import signal
import subprocess


def kill_with_its_groups(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    """What the run had written to its stdout and stderr pipes."""
    groups = [int(c) for t in os.listdir(f"/proc/{proc.pid}/task")
              for c in open(f"/proc/{proc.pid}/task/{t}/children").read().split()]
    proc.kill()
    out, err = proc.communicate(timeout=60)
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return out, err
