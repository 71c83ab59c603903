"""INV-10: the engine makes no network connection. Run under strace, every socket capsule opens
must be AF_UNIX; and in a network namespace with no interfaces it still counts real tokens."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from capsule.measure.ledger import Ledger


def test_run_and_pipe_open_no_inet_socket(state_dir, tmp_path):
    trace = tmp_path / "trace"
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    subprocess.run([shutil.which("strace"), "-f", "-qq", "-e", "trace=socket,connect", "-o", str(trace),
                    sys.executable, "-m", "capsule", "ctx", "run", "--", "git", "log", "-n", "30", "--stat"],
                   check=True, capture_output=True, env=env)
    calls = trace.read_text()
    families = set(re.findall(r"socket\((AF_\w+)", calls))
    assert families <= {"AF_UNIX"}, calls


def test_works_without_any_network(state_dir):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    r = subprocess.run(["unshare", "-n", sys.executable, "-m", "capsule", "ctx", "run", "--", "seq", "1", "3000"],
                       capture_output=True, env=env)
    assert r.returncode == 0, r.stderr
    assert b"[full output: capsule ctx expand" in r.stdout
    row = Ledger(state_dir / "ledger.db").rows()[-1]
    assert row["token_label"] == "cl100k_base"
