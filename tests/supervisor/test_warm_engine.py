"""The supervisor's warm engine (subsystems.warm_engine) leaves nothing for a request to set up: the
whole tokenizer is loaded at warm-up, so a large output's count loads and imports nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, random, sys
from pathlib import Path
from capsule.ground import tokens
from capsule.policy.manifest import load_role
from capsule.supervisor import subsystems

subsystems.warm_engine(Path(sys.argv[1]), "standard", load_role("python-dev"))
rng = random.Random(7)
# distinct lines well past the short-lived process's rank-subset budget (tokens.SUBSET_BUDGET_BYTES)
text = "".join(f"{rng.getrandbits(64):x} worker-{rng.randrange(10**6)} took {rng.random():.6f}s\\n"
               for _ in range(6000))
assert len(text) > 2 * tokens.SUBSET_BUDGET_BYTES
before = set(sys.modules)
n = tokens.count(text)
print(json.dumps({"count": n, "imported": sorted(set(sys.modules) - before), "label": tokens.label()}))
"""


def _probe(state) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env["JACKIN_CTX_STATE_DIR"] = str(state)
    done = subprocess.run([sys.executable, "-c", PROBE, str(state)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_warm_engines_first_large_count_loads_and_imports_nothing(tmp_path):
    state = tmp_path / "state"
    first = _probe(state)           # a fresh state dir: its tokenizer cache is written here
    again = _probe(state)           # a supervisor restarted on the same state dir (the usual case)
    for got in (first, again):
        assert got["imported"] == [], got["imported"]      # e.g. tiktoken, loaded by a request
        assert got["label"] == "cl100k_base" and got["count"] > 0
    assert first["count"] == again["count"]
