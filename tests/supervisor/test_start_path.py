"""What stands between the supervisor's exec and its engine serving (issue 32: start to ready): a
request that waited for the warming engine is answered when the engine is set, before the warm-up
rehearsal's samples (which only a later first call of their kind needs), and an agent with no model
API never loads the proxy's stack (httpx2 and the apps: ~100 ms of CPU beside the warming engine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio

from capsule.policy.manifest import load_role
from capsule.supervisor import control_server, subsystems
from capsule.supervisor.control_server import EngineServer

RAW = b"".join(b"step %d: processed shard-%d of the nightly batch\n" % (i, i * 7) for i in range(2000))
CMD = b"sh nightly.sh"


def test_requests_waiting_for_the_warming_engine_are_answered_before_its_rehearsal(tmp_path):
    engine = subsystems.warm_engine(tmp_path / "state", "standard", load_role("python-dev"))
    rehearsed: list[float] = []             # when each rehearsal sample ended
    understudy = engine.understudy

    def watched_understudy(state_dir):
        twin = understudy(state_dir)
        rehearse = twin.rehearse
        twin.rehearse = lambda obs: (rehearse(obs), rehearsed.append(time.monotonic()))
        return twin

    engine.understudy = watched_understudy
    server = EngineServer(tmp_path / "engine.sock", None, lambda: {"samples": len(rehearsed)}, warming=True)
    replies: dict[str, tuple[float, bytes]] = {}

    def ask(name: str, payload: bytes) -> None:
        reply = control_server.request(server.path, payload, timeout=60)
        replies[name] = (time.monotonic(), reply)

    async def main() -> None:
        await server.listen()
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            clients = [threading.Thread(target=ask, args=("status", b"STATUS\n")),
                       threading.Thread(target=ask, args=("obs", b"OBS1 0 1000 %d %d 0 0\n" % (len(CMD), len(RAW))
                                                          + CMD + RAW))]
            for c in clients:
                c.start()
            await anyio.sleep(0.3)          # both wait for the engine (warming)
            assert replies == {}
            server.set_engine(engine)       # as core.Supervisor._start_engine does: set, then rehearse
            await server.rehearse()
            await anyio.to_thread.run_sync(lambda: [c.join(60) for c in clients])
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        engine.close()
    assert len(rehearsed) == len(engine.warm_up_samples()) > 1     # the rehearsal still ran whole
    assert json.loads(replies["status"][1])["samples"] == 0
    assert replies["obs"][1].startswith(b"OK ")
    assert len(replies["obs"][1]) < len(RAW)                        # shaped, not passed raw
    assert max(t for t, _ in replies.values()) < rehearsed[0]       # both answered before the first sample


def test_an_agent_with_no_model_api_loads_no_proxy_stack(tmp_path):
    probe = f"""
import json, sys
from pathlib import Path
from capsule.policy.manifest import load_role
from capsule.supervisor import subsystems
proxy, redirect, info = subsystems.start_proxy(kind="shell", env={{}}, state_dir=Path({str(tmp_path)!r}),
    mode="standard", shims_on=True, role=load_role("python-dev"), workspace=Path({str(tmp_path)!r}), routing=None)
print(json.dumps({{"proxy": proxy is None and redirect is None, "info": info,
                  "loaded": sorted(m for m in sys.modules if m.startswith(("capsule.proxy", "httpx")))}}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["proxy"] and got["info"]["state"] == "not used"
    assert "shell" in got["info"]["reason"]
    assert got["loaded"] == []


def test_the_supervise_command_parses_without_the_other_command_groups():
    """`capsule supervise` (the image's PID 1) registers only its own group: the others are ~30 ms of
    imports before its socket answers. It parses as the whole parser does."""
    probe = """
import json, sys
from capsule.cli import main
argv = ["supervise", "--role", "python-dev", "--grace", "2", "--", "sh", "-c", "true"]
fast = vars(main.build_parser(argv).parse_args(argv))
loaded = sorted(m for m in main.COMMAND_MODULES if m in sys.modules)
whole = vars(main.build_parser().parse_args(argv))
print(json.dumps({"loaded": loaded, "same": fast == whole, "func": fast["func"].__name__}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["loaded"] == ["capsule.cli.runtime"]
    assert got["same"] and got["func"] == "cmd_supervise"


def test_the_index_warm_up_starts_once_the_engine_serves(tmp_path):
    """The index build's child (seconds of CPU) would take a core from the engine's warm-up: it starts
    after, and still finishes while the agent runs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(20):
        (ws / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env["JACKIN_CTX_STATE_DIR"] = str(state)
    done = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", "python-dev", "--local", "--workspace",
                           str(ws), "--", "sleep", "3"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    log = (state / "capsule.log").read_text()
    assert "workspace index warm: 20 files" in log, log
    assert log.index("engine warm") < log.index("workspace index warm-up started"), log


WARM = """
import json, sys, threading, time
from pathlib import Path
from capsule.engine import Engine
from capsule.ground import tokens
spans = {}
def timed(name, fn):
    def run(*a, **k):
        t0 = time.monotonic()
        try:
            return fn(*a, **k)
        finally:
            spans[name] = (t0, time.monotonic(), threading.get_ident())
    return run
tokens.load = timed("tokenizer", tokens.load)
Engine.archive = property(timed("archive", Engine.archive.fget))
engine = Engine(Path(sys.argv[1]), mode="standard")
try:
    engine.warm()
    print(json.dumps({"spans": spans, "label": tokens.label(),
                      "open": all((Path(sys.argv[1]) / f).is_file() for f in ("archive.db", "ledger.db"))}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__}))
"""


def _warm(state) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    done = subprocess.run([sys.executable, "-c", WARM, str(state)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_engine_opens_its_stores_while_the_tokenizer_loads(tmp_path):
    """A fresh state dir's stores are tens of ms of disk waits (their files created, synced): they
    open beside the tokenizer's load (CPU), not after it; warm still ends with both done."""
    got = _warm(tmp_path / "state")
    assert got["label"] == "cl100k_base" and got["open"]
    (t0, t1, tok_thread), (s0, s1, store_thread) = got["spans"]["tokenizer"], got["spans"]["archive"]
    assert tok_thread != store_thread
    assert s0 < t1 and t0 < s1          # the two spans overlap


def test_a_store_that_cannot_open_still_fails_the_warm_up(tmp_path):
    """What core.py fails open on (raw output, the agent runs): warm() raises as it did serially."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "archive.db").mkdir()      # not a database file: the archive cannot open
    assert _warm(state)["error"] == "StoreError"
