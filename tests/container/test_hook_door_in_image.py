"""The hook door inside the image (issue 30.3): `capsule up --role python-dev` (no --local) with the
real Claude Code of the image, scripted by a fake Messages API on this module's docker network
gateway to make one native Read of the fixture repository's order stream (data/orders.jsonl).

Three sessions on one workspace owned by uid 1000, two at a time: plain (JACKIN_CTX_DISABLE: the
client's own Read), the hook alone (JACKIN_CTX_NO_PROXY) and the hook with the proxy on (the
default). The hook's answer comes from PID 1's engine (the session's PostToolUse hook asks the
supervisor's socket): the Read comes back at most 0.55 of plain's tokens with every fact, the
original one `ctx expand` away, one ledger row, one memoized answer, nothing of the hook in the
agent's ~/.claude; with the proxy on too the same result is shrunk once and every later request
carries it unchanged. The role is python-dev under a name of this run's own (its state volume is
this module's alone).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.container.clients import PY, shipped_role, workspace
from tests.e2e import harness as h
from tests.fakes.anthropic import ToolCalls, result_text

from capsule.ground.tokens import count
from capsule.shims.hook_door import READ_NOTE

CLI = [sys.executable, "-m", "capsule"]
DATA = "/workspace/data/orders.jsonl"
FACTS = (h.BAD_ID, h.BAD_ERROR)
TARGET = 0.55
SESSIONS = {"plain": "JACKIN_CTX_DISABLE", "hook": "JACKIN_CTX_NO_PROXY", "both": None}
# What the state volume says afterwards: the ledger's rows, the hook's memoized answers, whether the
# proxy ran, the session dirs left, what the user-level Claude settings hold, the original's hash.
PROBE = """
import apsw, glob, hashlib, json, os, subprocess, sys
s = '/state/context'
rows = apsw.Connection(s + '/ledger.db').execute('select command, handle from emissions').fetchall() \\
    if os.path.exists(s + '/ledger.db') else []
log = open(s + '/capsule.log').read() if os.path.exists(s + '/capsule.log') else ''
handle = next((r[1] for r in rows if r[0] == 'cat DATA'), None)
original = subprocess.run([sys.executable, '-m', 'capsule', 'ctx', 'expand', handle], capture_output=True,
                          env={**os.environ, 'JACKIN_CTX_STATE_DIR': s}).stdout if handle else b''
print(json.dumps({'rows': rows, 'memo': len(glob.glob(s + '/hook-memo/*/*.json')), 'proxy': 'proxy on http' in log,
                  'sessions': [d for d in os.listdir(s + '/sessions') if d.isdigit()] if os.path.isdir(s + '/sessions') else [],
                  'expanded': hashlib.sha256(original).hexdigest() if original else None}))
""".replace("DATA", DATA)
def _session(tag: str, switch: str | None, net: tuple[str, str], ws: Path, tmp: Path, image: str) -> dict:
    """Detached, so the stopped container keeps the agent's home for a look afterwards."""
    name, gateway = net
    role = shipped_role(tmp, "python-dev", f"hook-{tag}")
    fake = type("GatewayToolCalls", (ToolCalls,), {"host": gateway})([("Read", {"file_path": DATA})])
    volume, cname = f"capsule-state-{role.stem}", f"capsule-{role.stem}"
    try:
        up = subprocess.run([*CLI, "up", "--role", str(role), "--workspace", str(ws), "--network", name,
                             "--name", cname, "--detach",
                             "-e", f"ANTHROPIC_BASE_URL=http://{gateway}:{fake.port}", "-e", "ANTHROPIC_API_KEY=test",
                             "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "-e", "DISABLE_AUTOUPDATER=1",
                             *(["-e", f"{switch}=1"] if switch else []), "--",
                             "claude", "-p", h.PROMPT, "--allowedTools", "Read", "--output-format", "json"],
                            capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert up.returncode == 0, up.stderr
        status = subprocess.run(["docker", "wait", cname], capture_output=True, text=True, timeout=h.TIMEOUT_S)
        logs = subprocess.run(["docker", "logs", cname], capture_output=True, text=True, timeout=60)
        home = tmp / f"home-{tag}"
        subprocess.run(["docker", "cp", f"{cname}:/home/agent", str(home)], capture_output=True, timeout=120)
        probe = subprocess.run(["docker", "run", "--rm", "--network", "none", "-u", "1000:1000",   # the owner's
                                "-v", f"{volume}:/state/context", "--entrypoint", PY, image, "-c", PROBE],
                               capture_output=True, text=True, timeout=120)
        assert probe.returncode == 0, probe.stderr
        results = [result_text(r) for r in fake.tool_results()]
        # the tool result in every request that carries one, as the model got it each time
        seen = [[result_text(r) for r in h.tool_results_in(b)] for b in fake.requests]
        user = [home / ".claude" / "settings.json", home / ".claude.json"]
        return {"status": status.stdout.strip(), "logs": logs.stdout[-1500:] + logs.stderr[-2500:],
                "results": results, "seen": [s for s in seen if s], **json.loads(probe.stdout),
                "home": "".join(p.read_text() for p in user if p.is_file()) if home.is_dir() else None}
    finally:
        subprocess.run([*CLI, "down", role.stem, cname, "--volumes"], capture_output=True)
        fake.close()


@pytest.fixture(scope="module")
def runs(image, network, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hook-door")
    tmp.chmod(0o755)
    ws, _ = workspace(tmp / "ws", (1000, 1000))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {t: pool.submit(_session, t, s, network, ws, tmp, image) for t, s in SESSIONS.items()}
        got = {t: f.result() for t, f in futures.items()}
    for tag, r in got.items():
        assert r["status"] == "0", f"{tag} exited {r['status']}: {r['logs']}"
        assert len(r["results"]) == 1, (tag, r["results"])
    return got, ws


def test_plain_is_the_clients_own_read(runs):
    got, _ = runs
    plain = got["plain"]
    assert all(f in plain["results"][0] for f in FACTS) and "<<ccr:" not in plain["results"][0]
    assert plain["rows"] == [] and plain["memo"] == 0 and not plain["proxy"]


def test_a_native_read_comes_back_shrunk_through_the_hook_with_the_proxy_off(runs):
    got, ws = runs
    plain, hook = got["plain"]["results"][0], got["hook"]
    read = hook["results"][0]
    assert not hook["proxy"]                                   # JACKIN_CTX_NO_PROXY: the hook door alone
    assert READ_NOTE in read.split("\n", 1)[0], read[:300]      # the hook door's answer (the client numbers its lines)
    for fact in FACTS:
        assert fact in read, read[:3000]
    assert count(read) <= TARGET * count(plain), (count(read), count(plain))
    assert [r[0] for r in hook["rows"]] == [f"cat {DATA}"], hook["rows"]    # one ledger row
    assert hook["memo"] == 1
    # the original is one `ctx expand` away, byte for byte
    assert hook["expanded"] == hashlib.sha256((ws / "data" / "orders.jsonl").read_bytes()).hexdigest()


def test_with_the_proxy_on_too_the_result_is_shrunk_once(runs):
    got, _ = runs
    both = got["both"]
    read = both["results"][0]
    assert both["proxy"]                                        # the proxy door carried the session
    assert READ_NOTE in read.split("\n", 1)[0] and read.count("<<ccr:") == 1, read[-600:]
    for fact in FACTS:
        assert fact in read
    assert count(read) <= TARGET * count(got["plain"]["results"][0])
    assert [r[0] for r in both["rows"]] == [f"cat {DATA}"], both["rows"]   # the proxy added no row of its own
    # every request after the Read carries the hook's bytes, unchanged by the proxy
    assert len(both["seen"]) >= 1 and all(s == [read] for s in both["seen"]), [len(s) for s in both["seen"]]


def test_the_hook_is_the_sessions_alone(runs):
    """Nothing of the hook door in the agent's user-level Claude files (they hold capsule's MCP
    registration in the image), and the session's own dir went with the session."""
    got, _ = runs
    for tag in ("hook", "both"):
        home = got[tag]["home"]
        assert home is not None and "mcpServers" in home, home
        assert "PostToolUse" not in home and "tool_hook" not in home, home
        assert got[tag]["sessions"] == [], got[tag]["sessions"]
