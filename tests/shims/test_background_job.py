"""A background process started through a shim (issue 24: `make serve` starting a server): its
output keeps flowing to the agent raw after the shimmed command exits, and the capture is freed when
it is done. Before, only the command's own line reached the agent; the server wrote into the shim's
orphaned memfd (104 MB held)."""

from __future__ import annotations

import os
import time

from capsule import shims

SERVE = """#!/bin/sh
( sleep 1; i=1; while [ $i -le 200 ]; do echo "server log $i"; i=$((i+1)); done; echo READY
  head -c 3000000 /dev/zero | tr '\\0' x; echo; echo END ) &
echo "make: started the server"
"""


def _memfd_holders(socket) -> list[str]:
    """Processes of this test's shims (their environment names its socket) holding a shim capture:
    the Python shim's memfd, or capsule-capture itself (its copier holds the job's pipes)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if str(socket).encode() not in open(f"/proc/{pid}/environ", "rb").read():
                continue
            if os.readlink(f"/proc/{pid}/exe").endswith("/" + shims.CAPTURE):
                found.append(pid + " capsule-capture")
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if "memfd:capsule-out" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                    found.append(pid + " " + open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
        except OSError:
            continue
    return found


def test_a_background_jobs_output_reaches_the_agent_raw(shimenv):
    (shimenv.real_dir / "serve").write_text(SERVE)
    (shimenv.real_dir / "serve").chmod(0o755)
    shims.install(shimenv.shim_dir, names=["serve"])
    proc = shimenv.run("serve", JACKIN_CTX_AGENT="shell")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.startswith("make: started the server\n")
    assert all(f"server log {i}\n" in out for i in range(1, 201))
    assert "READY\n" in out and out.count("x") == 3_000_000 and out.endswith("END\n")
    deadline = time.monotonic() + 10     # the copier exits once the job has gone (it looks every 0.5 s)
    while _memfd_holders(shimenv.socket) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _memfd_holders(shimenv.socket) == []
