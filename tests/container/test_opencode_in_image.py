"""The real OpenCode inside the image (issue 30.2): `capsule up --role python-dev -- opencode run …`
with its Anthropic provider at a fake Messages API on this module's docker network gateway
(OPENCODE_CONFIG in the workspace), the e2e harness's session (git log, cat json, cat jsonl, grep;
its pytest call is left out: the image carries no pytest).

Two sessions on two identical workspaces owned by uid 1000, in parallel: plain (JACKIN_CTX_DISABLE:
OpenCode's own tool results) and capsule. In capsule mode the model gets every fact in at most 0.55
of plain's tool-result tokens, and the usage the supervisor read from OpenCode's own opencode.db
(in the agent's home in the container) equals what the fake reported, bucket by bucket. The role is
python-dev under a name of this run's own (its state volume is this module's alone).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.container.clients import PY, shipped_role, workspace
from tests.e2e import harness as h

CLI = [sys.executable, "-m", "capsule"]
TARGET = 0.55
SESSIONS = {"plain": "JACKIN_CTX_DISABLE", "capsule": None}
CALLS = tuple(c for c in h.CALLS if c.name != "pytest")     # the image carries no pytest
PROBE = """
import apsw, json, os
db = '/state/context/usage.db'
row = apsw.Connection(db).execute(
    "SELECT count(*), sum(input_tokens), sum(cache_read_input_tokens), sum(cache_creation_5m), sum(output_tokens) "
    "FROM calls WHERE agent = 'opencode'").fetchone() if os.path.exists(db) else [0, None, None, None, None]
print(json.dumps(dict(zip(('calls', 'input', 'cache_read', 'cache_write', 'output'), row))))
"""


def _session(mode: str, switch: str | None, net: tuple[str, str], tmp: Path, image: str) -> tuple[h.Session, dict]:
    name, gateway = net
    ws, head = workspace(tmp / mode, (1000, 1000))
    role = shipped_role(tmp, "python-dev", f"opencode-{mode}")
    fake = type("GatewayOpenCode", (h.FakeOpenCodeModel,), {"host": gateway})(CALLS)
    config = ws / ".opencode-test.json"
    config.write_text(json.dumps({
        "provider": {"anthropic": {"options": {"baseURL": f"http://{gateway}:{fake.port}/v1", "apiKey": "test"}}},
        "model": "anthropic/claude-sonnet-4-5", "autoupdate": False, "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow"}}))
    os.chown(config, 1000, 1000)
    volume = f"capsule-state-{role.stem}"
    try:
        proc = subprocess.run([*CLI, "up", "--role", str(role), "--workspace", str(ws), "--network", name,
                               "--name", f"capsule-{role.stem}",
                               "-e", "OPENCODE_CONFIG=/workspace/.opencode-test.json", "-e", "SHELL=/bin/bash",
                               *(["-e", f"{switch}=1"] if switch else []), "--", "opencode", "run", h.PROMPT],
                              capture_output=True, text=True, timeout=h.TIMEOUT_S, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"opencode ({mode}) exited {proc.returncode}:\n{proc.stdout[-1500:]}\n{proc.stderr[-2500:]}"
        probe = subprocess.run(["docker", "run", "--rm", "--network", "none", "-u", "1000:1000",
                                "-v", f"{volume}:/state/context", "--entrypoint", PY, image, "-c", PROBE],
                               capture_output=True, text=True, timeout=120)
        assert probe.returncode == 0, probe.stderr
        session = h.Session("opencode", mode, fake.tool_results(), ws, proc.stdout, proc.stderr,
                            [h.facts_for(c, head) for c in CALLS], fake.requests, fake)
        return session, json.loads(probe.stdout)
    finally:
        subprocess.run([*CLI, "down", role.stem, f"capsule-{role.stem}", "--volumes"], capture_output=True)
        fake.close()


@pytest.fixture(scope="module")
def runs(image, network, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("opencode-in-image")
    tmp.chmod(0o755)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {m: pool.submit(_session, m, s, network, tmp, image) for m, s in SESSIONS.items()}
        return {m: f.result() for m, f in futures.items()}


def test_opencode_in_the_image_sees_every_fact_in_at_most_55_percent_of_plain(runs):
    (plain, _), (cap, _) = runs["plain"], runs["capsule"]
    assert len(cap.results) == len(plain.results) == len(CALLS)
    table = h.table([(plain, cap)], CALLS)
    for i, call in enumerate(CALLS):
        assert not plain.missing(i), f"plain {call.name}: missing {plain.missing(i)}\n{table}"
        assert not cap.missing(i), f"capsule {call.name}: missing {cap.missing(i)}\n{table}\n{cap.results[i][:3000]}"
        assert cap.tokens()[i] <= plain.tokens()[i], f"{call.name} grew\n{table}"
    ratio = sum(cap.tokens()) / sum(plain.tokens())
    assert ratio <= TARGET, f"{ratio:.2f} of plain\n{table}"
    print(f"\n{table}")


def test_opencode_usage_from_its_own_database_equals_the_fakes(runs):
    cap, stored = runs["capsule"]
    agent_calls = [e["usage"] for e, body in zip(cap.fake.log, cap.fake.requests) if body.get("tools")]
    want = {"calls": len(agent_calls), "input": sum(u["input_tokens"] for u in agent_calls),
            "cache_read": sum(u["cache_read_input_tokens"] for u in agent_calls),
            "cache_write": sum(u["cache_creation_input_tokens"] for u in agent_calls),
            "output": sum(u["output_tokens"] for u in agent_calls)}
    assert want["calls"] >= len(CALLS) + 1
    assert stored == want
    _, plain_stored = runs["plain"]
    assert plain_stored["calls"] == 0          # the master switch: nothing measured, nothing stored
