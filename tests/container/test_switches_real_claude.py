"""Each kill switch with the real Claude Code inside the image (issue 22).

One short session per switch (and one without): the role's own agent command, so routing applies,
starts `claude -p`; the scripted fake model (on this module's docker network gateway) asks for one
`command -v git; git log --stat -15` and ends. What each switch changes is read where it shows:
the tool result the model got (which git ran, compressed or raw), the tools it was offered (capsule's MCP), the model it was asked
for (routing), and the state volume afterwards (ledger rows, the proxy door in capsule.log).
The sessions run two at a time on one workspace owned by uid 1000.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.container.clients import HANDLE, LOG, PY, text, workspace
from tests.e2e import harness as h
from tests.fakes.anthropic import deferred

CLI = [sys.executable, "-m", "capsule"]
MODEL = "claude-haiku-4-5"          # the role's model: the fake sees it only when routing is on
ROLE = """\
schema = 1
name = "{name}"
[agent]
kind = "claude"
model = "{model}"
command = ["claude", "-p", "{prompt}", "--allowedTools", "Bash,mcp__capsule", "--output-format", "json"]
[context]
mode = "standard"
[context.routing]
effort_default = "low"
"""
# switch -> (capsule's git shim on the Bash tool's PATH, result compressed, ledger rows, applied,
#            capsule's MCP tools offered, the role's model asked for, the proxy door)
# NO_SHIMS: the shell result is still compressed, by the proxy door, which takes shell results
# over when the shims are off (INV-8: one rewrite path at a time).
SWITCHES = {
    None: (True, True, 1, 1, True, True, True),
    "JACKIN_CTX_DISABLE": (False, False, 0, None, False, False, False),
    "JACKIN_CTX_NO_SHIMS": (False, True, 1, 1, True, True, True),
    "JACKIN_CTX_MEASURE_ONLY": (True, False, 1, 0, True, True, True),
    "JACKIN_CTX_NO_MCP": (True, True, 1, 1, False, True, True),
    "JACKIN_CTX_NO_REGISTER": (True, True, 1, 1, True, True, True),    # the output register's switch
    "JACKIN_CTX_NO_ROUTING": (True, True, 1, 1, True, False, True),
    "JACKIN_CTX_NO_PROXY": (True, True, 1, 1, True, True, False),
}
PROBE = """
import apsw, json, os
s = '/state/context'
rows = apsw.Connection(s + '/ledger.db').execute('select applied, scope, command from emissions').fetchall() \\
    if os.path.exists(s + '/ledger.db') else []
log = open(s + '/capsule.log').read() if os.path.exists(s + '/capsule.log') else ''
print(json.dumps({'applied': [r[0] for r in rows], 'rows': rows, 'proxy': 'proxy on http' in log}))
"""


MCP_TOOLS = ("mcp__capsule__ctx_expand",)    # the read door's tool this test looks for


class OneCall(h.FakeClaudeModel):
    def __init__(self, host: str):
        self.host = host
        super().__init__(calls=(h.Call("git log", f"command -v git; {LOG}", "Show history", ()),))


def _session(switch: str | None, net: tuple[str, str], ws: Path, tmp: Path, image: str) -> dict:
    name, gateway = net
    tag = (switch or "baseline").removeprefix("JACKIN_CTX_").lower().replace("_", "-")
    role = tmp / f"e2e-sw-{tag}-{os.getpid()}.toml"
    role.write_text(ROLE.format(name=role.stem, model=MODEL, prompt=h.PROMPT))
    role.chmod(0o644)
    fake = OneCall(gateway)
    volume = f"capsule-state-{role.stem}"
    try:
        proc = subprocess.run([*CLI, "up", "--role", str(role), "--workspace", str(ws), "--network", name,
                               "--name", f"capsule-{role.stem}",
                               "-e", f"ANTHROPIC_BASE_URL=http://{gateway}:{fake.port}", "-e", "ANTHROPIC_API_KEY=test",
                               "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "-e", "DISABLE_AUTOUPDATER=1",
                               *(["-e", f"{switch}=1"] if switch else [])],
                              capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
        probe = subprocess.run(["docker", "run", "--rm", "--network", "none", "-u", "0:0",
                                "-v", f"{volume}:/state/context", "--entrypoint", PY, image, "-c", PROBE],
                               capture_output=True, text=True, timeout=120)
        assert probe.returncode == 0, probe.stderr
        # the tools offered: definitions, and (Claude Code 2.1.332 defers MCP tools behind ToolSearch)
        # the names in a request's deferred-tools list
        tools = {t.get("name") for b in fake.requests for t in b.get("tools") or []}
        tools |= {n for n in MCP_TOOLS if any(deferred(b, n) for b in fake.requests)}
        models = {b.get("model") for b in fake.requests if any(t.get("name") == "Bash" for t in b.get("tools") or [])}
        return {"proc": proc, "results": fake.tool_results(), "tools": tools, "models": models,
                **json.loads(probe.stdout)}
    finally:
        subprocess.run([*CLI, "down", role.stem, "--volumes"], capture_output=True)
        fake.close()


@pytest.fixture(scope="module")
def runs(image, network, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("switches")
    tmp.chmod(0o755)
    ws, _ = workspace(tmp / "ws", (1000, 1000))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {s: pool.submit(_session, s, network, ws, tmp, image) for s in SWITCHES}
        return {s: f.result() for s, f in futures.items()}, ws


@pytest.mark.parametrize("switch", list(SWITCHES), ids=lambda s: s or "baseline")
def test_each_kill_switch_with_the_real_claude_in_the_image(runs, switch):
    shimmed, compressed, n_rows, applied, mcp, routed, proxy = SWITCHES[switch]
    got, ws = runs
    r = got[switch]
    assert r["proc"].returncode == 0, f"{r['proc'].stdout[-1500:]}\n{r['proc'].stderr[-2500:]}"
    shown = text(r["results"][0]) if r["results"] else ""
    raw = subprocess.run(["git", "-c", f"safe.directory={ws}", "log", "--stat", "-15"], cwd=ws,
                         capture_output=True, text=True, check=True).stdout
    where = re.sub(r"^\d+: ", "", shown.split("\n", 1)[0])     # the proxy door numbers the lines it keeps
    assert where == ("/opt/capsule/shims/git" if shimmed else "/usr/bin/git"), shown[:300]
    assert bool(HANDLE.search(shown)) is compressed, shown[-600:]
    if not compressed:
        assert raw.strip() in shown
    assert len(r["applied"]) == n_rows, r["applied"]
    if n_rows:
        assert r["applied"][0] == applied
    assert ("mcp__capsule__ctx_expand" in r["tools"]) is mcp, sorted(r["tools"])
    assert (r["models"] == {MODEL}) is routed, r["models"]
    assert r["proxy"] is proxy
