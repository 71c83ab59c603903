"""A cold `capsule ctx run` (the in-process fallback) logs only to the state dir: a run that logs
nothing writes no log file and nothing to the user's streams, a run that does log writes its record
to the log file only, and a run with no output starts no engine. (Keeping `logging`, `typing` and
tiktoken out of a cold run went with issue 32: `ctx run` talks to a warm engine, and the in-process
fallback builds the tokenizer like any other process.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
sys.argv = ["capsule", "ctx", "run", "--", "seq", "1", "3000"]
from capsule.cli.main import main
code = main()
sys.stdout.flush()
print(json.dumps([m for m in ("logging", "typing", "tiktoken", "structlog", "capsule.measure.ledger") if m in sys.modules]),
      file=sys.stderr)
"""


def _probe(state_dir, **env):
    full = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), **env}
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, env=full, timeout=60)


def test_a_run_that_logs_nothing_writes_no_log(state_dir):
    proc = _probe(state_dir)
    assert proc.returncode == 0
    assert len(proc.stdout) < len("".join(f"{i}\n" for i in range(1, 3001)))      # it was compressed
    found = json.loads(proc.stderr)                                  # the only thing on stderr is the probe's line
    assert "tiktoken" in found                                       # it counted the output's tokens
    assert "capsule.measure.ledger" not in found                     # its finisher writes the row, after the output
    assert not (state_dir / "capsule.log").exists()


def test_a_run_that_logs_writes_the_record_to_the_log_file_only(state_dir):
    raw = "".join(f"{i}\n" for i in range(1, 3001)).encode()
    proc = _probe(state_dir, JACKIN_CTX_FAULT_INJECT="*")
    assert proc.returncode == 0 and proc.stdout == raw             # fail open: the whole raw output
    assert "logging" in json.loads(proc.stderr)                     # the only thing on stderr is the probe's line
    assert "injected fault" in (state_dir / "capsule.log").read_text()


SILENT = """
import json, sys
sys.argv = ["capsule", "ctx", "run", "--", "true"]
from capsule.cli.main import main
code = main()
print(json.dumps([code] + [m for m in ("capsule.engine", "capsule.observe", "dataclasses") if m in sys.modules]))
"""


def test_a_run_that_prints_nothing_starts_no_engine_and_imports_no_dataclasses(state_dir):
    # Most of a silent run's start was importing dataclasses for the door's values (ground/types.py,
    # ground/switches.py); with no output there is nothing for the engine to do.
    full = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    proc = subprocess.run([sys.executable, "-c", SILENT], capture_output=True, env=full, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [0]
