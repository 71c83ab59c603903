"""The supervisor's warm engine (subsystems.warm_engine, then EngineServer.rehearse once it serves)
leaves nothing for a request to set up: the whole tokenizer is loaded at warm-up, so a large
output's count loads and imports nothing, and the rehearsals load what the pipeline imports on
first use, so an agent's first call of any kind imports nothing either; nothing rehearsed is kept."""

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
# distinct lines well past the size counted by segments (tokens.SEGMENTED_FROM): the long-text path
text = "".join(f"{rng.getrandbits(64):x} worker-{rng.randrange(10**6)} took {rng.random():.6f}s\\n"
               for _ in range(6000))
assert len(text) > 2 * tokens.SEGMENTED_FROM
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
    first = _probe(state)           # a fresh state dir
    again = _probe(state)           # a supervisor restarted on the same state dir (the usual case)
    for got in (first, again):
        assert got["imported"] == [], got["imported"]      # e.g. tiktoken, loaded by a request
        assert got["label"] == "cl100k_base" and got["count"] > 0
    assert first["count"] == again["count"]


CALLS = """
import json, subprocess, sys
from pathlib import Path
import anyio
from capsule.supervisor.control_server import EngineServer
from capsule.policy.manifest import load_role
from capsule.shims import door
from capsule.supervisor import subsystems

engine = subsystems.warm_engine(Path(sys.argv[1]), "standard", load_role("python-dev"))
server = EngineServer(Path(sys.argv[1]) / "engine.sock", engine)
anyio.run(server.rehearse)          # as the supervisor and the engine daemon do once serving
assert engine.ledger.count() == 0 and engine.archive.stats()["entries"] == 0   # nothing rehearsed was kept
work = Path(sys.argv[2])
def run(*argv, cwd=work):
    done = subprocess.run(list(argv), capture_output=True, cwd=cwd)
    return " ".join(argv), done.stdout, done.stderr, done.returncode
(work / "broken.py").write_text("import json\\n\\ndef load(p):\\n    return json.loads(open(p).read())\\n\\nload('x.json')\\n")
(work / "x.json").write_text("{not json")
(work / "rows.csv").write_text("id,name,count\\n" + "".join(f"{i},name-{i},{i * 3}\\n" for i in range(400)))
calls = [run("ls", "-la", "/usr/bin"), run("git", "log", "-n", "30", cwd=sys.argv[3]),
         run("git", "log", "-p", "-n", "3", cwd=sys.argv[3]), run(sys.executable, "broken.py"),
         run("cat", "rows.csv"), run("cat", str(Path(sys.argv[3]) / "README.md")),
         run("cat", str(Path(sys.argv[3]) / "capsule" / "engine.py")),
         run("grep", "-rn", "def ", str(Path(sys.argv[3]) / "capsule" / "supervisor")),
         run(sys.executable, "-c", "import json; print(json.dumps([{'id': i, 'ok': i % 7 != 0} for i in range(300)], indent=1))")]
meta = {"CLAUDECODE": "1", "JACKIN_CTX_AGENT": "claude"}
before = set(sys.modules)
shrunk = 0
for command, out, err, code in calls:
    new_out, new_err = door.observe_command(engine, command, out, err, code, 1.0, cwd=str(work), meta=meta)
    shrunk += len(new_out) + len(new_err) < len(out) + len(err)
    engine.drain()
print(json.dumps({"imported": sorted(set(sys.modules) - before), "shrunk": shrunk, "calls": len(calls)}))
"""


def test_a_warm_engines_first_calls_of_each_kind_import_nothing(tmp_path):
    """Real outputs of several kinds (a listing, a log, a diff, a traceback, CSV, markdown, source,
    search hits, JSON), each the engine's first of its kind: none imports a module (a first call
    of a kind paid 20-40 ms of imports before Engine.warm)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env["JACKIN_CTX_STATE_DIR"] = str(tmp_path / "state")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-c", CALLS, str(tmp_path / "state"), str(work), root], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["imported"] == [], got["imported"]
    assert got["shrunk"] >= 5          # the calls were shaped, not passed whole as small outputs
