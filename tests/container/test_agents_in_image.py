"""The real Claude Code and the real Codex inside the capsule image (issue 22), end to end.

`capsule up` starts each client in its container on a docker network this module creates; a
scripted fake model API (tests/e2e/harness.py) listens on that network's gateway address on the
host. One session per client, run in parallel: Claude Code detached on a workspace owned by uid
501 (ps, logs, doctor, usage, limits and ids checked while it runs, then `capsule down --volumes`
delivers SIGTERM to its tool call), Codex in the foreground on a root-owned workspace with --user 0:0 (its exit
status is the container's). Both: a compressed shim view, a program's raw capture, MCP
ctx_expand of the handle the shim printed, the proxy door, and files created, edited and deleted
in the workspace with the owners the rule in README.md says.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.container.clients import HANDLE, LOG, PY, text, workspace
from tests.e2e import harness as h

from capsule.policy.manifest import load_role
from capsule.prompt import pack

CLI = [sys.executable, "-m", "capsule"]
# A program capturing git inside the agent's call gets git's own bytes (written to the workspace),
# then the call creates, edits and deletes files and says who it runs as.
FILE_OPS = ("python3 -c \"import subprocess; open('captured.log', 'wb').write("
            "subprocess.run(['git', 'log', '--stat', '-15'], capture_output=True).stdout)\""
            " && echo draft > notes.txt && sed -i s/draft/final/ notes.txt && mkdir -p build && touch build/out.o"
            " && rm -r build data/orders.json && echo ids $(id -u):$(id -g)")
# The last call of the Claude session runs until `capsule down`; its TERM trap leaves a file.
LONG = ("trap 'echo TERM > term-child.txt; exit 0' TERM; echo up > child-started.txt; "
        "while :; do sleep 0.2; done")
RESOURCES = {"cpus": 1, "memory": "1g", "pids": 512}
ROLE = """\
schema = 1
name = "{name}"
[agent]
kind = "{kind}"
[resources]
cpus = {cpus}
memory = "{memory}"
pids = {pids}
[context]
mode = "standard"
languages = ["python"]
"""


def _handle_in(shown: str) -> str:
    m = HANDLE.search(shown)
    return m.group(1) if m else "<<ccr:" + "0" * 24 + ">>"


class ClaudeScript(h.FakeClaudeModel):
    """git log, ctx_expand of its handle (MCP), file operations, then a call that runs until stopped."""

    def __init__(self, host: str):
        self.host = host
        super().__init__(calls=())

    def _blocks(self, body: dict) -> list[dict]:
        results = self.results_in(body)
        offered = {t.get("name") for t in body.get("tools") or []}
        step = len(results)

        def bash(cmd: str) -> list[dict]:
            return [{"type": "tool_use", "id": f"toolu_{step:02d}", "name": "Bash",
                     "input": {"command": cmd, "description": f"step {step}"}}]
        if "Bash" not in offered:                     # the client's own side requests
            return [{"type": "text", "text": "ok"}]
        if step == 0:
            return bash(LOG)
        if step == 1:
            return [{"type": "tool_use", "id": "toolu_01", "name": "mcp__capsule__ctx_expand",
                     "input": {"handle": _handle_in(text(results[0].get("content")))}}]
        if step == 2:
            return bash(FILE_OPS)
        if step == 3:
            return bash(LONG)
        return [{"type": "text", "text": "done"}]


class CodexScript(h.FakeCodexModel):
    """git log, ctx_expand of its handle (MCP), file operations, then a failed response: Codex exits 1."""

    def __init__(self, host: str):
        self.host = host
        super().__init__(calls=())

    def _item(self, body: dict) -> dict:
        outs = self.outputs_in(body)
        step = len(outs)

        def call(name: str, args: dict, **extra) -> dict:
            return {"type": "function_call", "id": f"fc_{step}", "call_id": f"call_{step}", "name": name,
                    "arguments": json.dumps(args), "status": "completed", **extra}
        if step == 0:
            return call("exec_command", {"cmd": LOG})
        if step == 1:
            return call("ctx_expand", {"handle": _handle_in(text(outs[0].get("output")))}, namespace="mcp__capsule")
        if step == 2:
            return call("exec_command", {"cmd": FILE_OPS})
        return {}                                      # no item: the stream fails (response.failed)


# ---- fixtures ---------------------------------------------------------------------------------
def _role(tmp: Path, kind: str) -> Path:
    name = f"e2e-{kind}-{os.getpid()}"
    path = tmp / f"{name}.toml"
    path.write_text(ROLE.format(name=name, kind=kind, **RESOURCES))
    path.chmod(0o644)
    return path


def _docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def _wait_for(path: Path, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the session ended before {path.name} appeared")
        assert time.monotonic() < deadline, f"{path} did not appear in {timeout}s"
        time.sleep(0.2)


def _owners(ws: Path, names: list[str]) -> dict[str, tuple[int, int]]:
    return {n: (os.stat(ws / n).st_uid, os.stat(ws / n).st_gid) for n in names}


def _raw_log(ws: Path) -> bytes:
    return subprocess.run(["git", "-c", f"safe.directory={ws}", "log", "--stat", "-15"], cwd=ws,
                          capture_output=True, check=True).stdout


def _files(ws: Path) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".codex-home")]
        out.update(os.path.relpath(os.path.join(dirpath, n), ws) for n in filenames)
    return out


def _check_common(fake, results: list[str], ws: Path, before: set[str], extra: set[str], role: Path) -> None:
    raw = _raw_log(ws)
    # the workspace changed only by the agent's own calls: capsule wrote nothing there (no note,
    # no config); the note reached the model from the agent's user-level file in the container
    assert _files(ws) == (before - {"data/orders.json"}) | {"captured.log", "notes.txt"} | extra
    standing = pack.standing_text(load_role(role).context.output, read_door=True, legend="")
    line = max(standing.splitlines(), key=len)       # the role's standing text, as the supervisor wrote it
    assert any(line in json.dumps(b, ensure_ascii=False) for b in fake.requests), \
        f"capsule's note never reached the model: {line!r}"
    shown, expanded, ops = results[0], results[1], results[2]
    assert HANDLE.search(shown) and len(shown.encode()) < len(raw), f"no compressed shim view:\n{shown[-800:]}"
    assert raw.decode().strip() in expanded, f"ctx_expand did not return the original:\n{expanded[-800:]}"
    assert (ws / "captured.log").read_bytes() == raw           # the program's capture: git's own bytes
    assert (ws / "notes.txt").read_text() == "final\n"         # created, then edited
    assert not (ws / "data" / "orders.json").exists() and not (ws / "build").exists()   # deleted
    assert "ids " in ops, ops


# ---- the sessions ------------------------------------------------------------------------------
def _claude_session(net: tuple[str, str], tmp: Path) -> dict:
    """Detached, on a workspace owned by 501:20 (a macOS user's ids)."""
    name, gateway = net
    ws, _ = workspace(tmp / "claude", (501, 20))
    role = _role(tmp, "claude")
    cname = f"capsule-e2e-claude-{os.getpid()}"
    fake = ClaudeScript(gateway)
    out: dict = {"ws": ws, "fake": fake, "name": cname, "volume": f"capsule-state-{role.stem}", "before": _files(ws),
                 "role": role}
    try:
        up = subprocess.run([*CLI, "up", "--role", str(role), "--workspace", str(ws), "--detach", "--name", cname,
                             "--network", name,
                             "-e", f"ANTHROPIC_BASE_URL=http://{gateway}:{fake.port}", "-e", "ANTHROPIC_API_KEY=test",
                             "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "-e", "DISABLE_AUTOUPDATER=1",
                             "-e", "JACKIN_CTX_USAGE_INTERVAL=0.5", "--",
                             "claude", "-p", h.PROMPT, "--allowedTools", "Bash,mcp__capsule", "--output-format", "json"],
                            capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, up.stderr
        _wait_for(ws / "child-started.txt", 240)
        # while the agent runs: who it is, what doctor says, usage so far, the limits Docker applies
        out["ps"] = subprocess.run([*CLI, "ps"], capture_output=True, text=True).stdout
        out["logs"] = subprocess.run([*CLI, "logs", cname], capture_output=True, text=True)
        out["doctor"] = _docker("exec", "-u", "501:20", cname, "capsule", "ctx", "doctor", "--json")
        out["procs"] = _docker("exec", cname, "ps", "-eo", "uid=,gid=,args=").stdout
        out["state"] = _docker("exec", cname, "stat", "-c", "%u:%g %a", "/state/context").stdout.strip()
        deadline = time.monotonic() + 30
        while True:
            usage = _docker("exec", "-u", "501:20", cname, PY, "-c",
                            "import apsw; print(apsw.Connection('/state/context/usage.db')"
                            ".execute('select count(*) from calls').fetchall()[0][0])")
            out["usage_rows"] = int(usage.stdout.strip() or 0) if usage.returncode == 0 else 0
            if out["usage_rows"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        out["inspect"] = json.loads(_docker("inspect", cname).stdout)[0]
        out["results"] = [text(r.get("content")) for r in max((fake.results_in(b) for b in fake.requests),
                                                               key=len, default=[])]
        down = subprocess.run([*CLI, "down", cname, "--volumes"], capture_output=True, text=True, timeout=120)
        out["down"] = down
        out["left"] = _docker("ps", "-aq", "--filter", f"name={cname}").stdout.strip()
        out["volumes"] = _docker("volume", "ls", "-q").stdout.split()
        return out
    finally:
        subprocess.run([*CLI, "down", cname, "--volumes"], capture_output=True)
        fake.close()


def _codex_session(net: tuple[str, str], tmp: Path) -> dict:
    """Foreground, on a root-owned workspace; the scripted model fails the last turn."""
    name, gateway = net
    ws, _ = workspace(tmp / "codex", (0, 0))
    role = _role(tmp, "codex")
    fake = CodexScript(gateway)
    codex_home = ws / ".codex-home"       # the user's Codex config, inside the workspace for this test
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(fake.provider_config().replace("127.0.0.1", gateway))
    out: dict = {"ws": ws, "fake": fake, "volume": f"capsule-state-{role.stem}", "before": _files(ws), "role": role}
    try:
        # root only because asked: `up` refuses a root-owned workspace by default (issue 31)
        proc = subprocess.run([*CLI, "up", "--role", str(role), "--workspace", str(ws), "--name",
                               f"capsule-e2e-codex-{os.getpid()}", "--network", name, "--user", "0:0",
                               "-e", "OPENAI_API_KEY=test", "-e", "CODEX_HOME=/workspace/.codex-home", "--",
                               "codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                               "-m", h.CODEX_MODEL, h.PROMPT],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        out["proc"] = proc
        out["results"] = fake.tool_results()
        # the state volume after the container is gone: owner-only, root's here (the agent's uid)
        probe = _docker("run", "--rm", "--network", "none", "-u", "0:0", "-v", f"{out['volume']}:/state/context",
                        "--entrypoint", "bash", IMAGE_FOR_PROBE[0], "-c",
                        "stat -c '%u:%g %a' /state/context; " + PY + " -c \"import apsw; print(apsw.Connection("
                        "'/state/context/usage.db').execute('select count(*) from calls').fetchall()[0][0])\"")
        assert probe.returncode == 0, probe.stderr
        out["state"], out["usage_rows"] = probe.stdout.split("\n", 1)
        out["usage_rows"] = out["usage_rows"].strip()
        return out
    finally:
        subprocess.run([*CLI, "down", role.stem, "--volumes"], capture_output=True)
        fake.close()


IMAGE_FOR_PROBE: list[str] = []


@pytest.fixture(scope="module")
def sessions(image, network, tmp_path_factory):
    IMAGE_FOR_PROBE[:] = [image]
    tmp = tmp_path_factory.mktemp("agents-in-image")
    tmp.chmod(0o755)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        claude = pool.submit(_claude_session, network, tmp)
        codex = pool.submit(_codex_session, network, tmp)
        return {"claude": claude.result(), "codex": codex.result()}


# ---- what they show ----------------------------------------------------------------------------
def test_claude_in_the_image_sees_the_shim_view_expands_it_and_writes_as_the_workspace_owner(sessions):
    s = sessions["claude"]
    _check_common(s["fake"], s["results"], s["ws"], s["before"], {"child-started.txt", "term-child.txt"}, s["role"])
    assert "ids 501:20" in s["results"][2]
    # every file the agent made belongs to the host user who owns the workspace
    assert set(_owners(s["ws"], ["captured.log", "notes.txt", "child-started.txt", "term-child.txt"]).values()) \
        == {(501, 20)}
    claude_procs = [line.split() for line in s["procs"].splitlines() if "claude" in line.split(None, 2)[2][:40]]
    assert claude_procs and all(p[:2] == ["501", "20"] for p in claude_procs), s["procs"]
    assert s["state"] == "501:20 700"               # the state volume: the agent's uid, owner-only


def test_claude_container_doctor_ps_logs_usage_limits_and_down(sessions):
    s = sessions["claude"]
    assert s["doctor"].returncode == 0, s["doctor"].stderr
    doctor = json.loads(s["doctor"].stdout)
    import tomllib

    pins = {c["command"]: c["version"] for c in tomllib.loads((Path(__file__).resolve().parents[2] / "image/agent-clis.toml").read_text())["cli"]}
    assert doctor["agent"]["command"] == "claude" and doctor["agent"]["version"] == pins["claude"]
    assert doctor["clients"]["codex"]["version"] == pins["codex"]
    assert doctor["agent"]["version_warning"] is None                        # inside the tested range
    assert doctor["supervisor"]["pid"] == 1
    assert doctor["supervisor"]["proxy"]["state"] == "running"               # the proxy door ...
    assert doctor["supervisor"]["proxy"]["stats"]["requests"] >= 3           # ... carried the turns so far
    assert s["usage_rows"] > 0                                               # ingested while it runs
    assert s["name"] in s["ps"] and "501:20" in s["ps"]
    assert s["logs"].returncode == 0 and "the agent runs as uid 501, gid 20" in s["logs"].stdout + s["logs"].stderr
    host = s["inspect"]["HostConfig"]
    assert host["NanoCpus"] == RESOURCES["cpus"] * 10**9
    assert host["Memory"] == 1 << 30
    assert host["PidsLimit"] == RESOURCES["pids"]
    assert "no-new-privileges" in host["SecurityOpt"] and host["CapDrop"] == ["ALL"]
    # `capsule down` stopped it with SIGTERM: the agent's tool call ran its trap, nothing is left
    assert s["down"].returncode == 0, s["down"].stderr
    assert (s["ws"] / "term-child.txt").read_text() == "TERM\n"
    assert s["left"] == "" and s["volume"] not in s["volumes"]


def test_codex_in_the_image_on_a_root_owned_workspace_and_its_exit_status(sessions):
    s = sessions["codex"]
    proc = s["proc"]
    assert proc.returncode == 1, f"{proc.stdout[-1500:]}\n{proc.stderr[-2500:]}"   # Codex's own status
    assert "scripted failure" in proc.stdout + proc.stderr
    _check_common(s["fake"], s["results"], s["ws"], s["before"], set(), s["role"])
    assert "ids 0:0" in s["results"][2]             # root-owned workspace: the agent is root there
    assert set(_owners(s["ws"], ["captured.log", "notes.txt"]).values()) == {(0, 0)}
    assert int(s["usage_rows"]) > 0                 # Codex's rollout, ingested from its CODEX_HOME
    assert s["state"] == "0:0 700"


def test_a_user_override_that_cannot_write_the_workspace_is_said_at_start(image, tmp_path):
    """--user wins over the owner; when those ids cannot write the workspace the log says so."""
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)                                  # root's, not writable by 1234
    name = f"capsule-e2e-user-{os.getpid()}"
    role = _role(tmp_path, "shell")
    try:
        proc = subprocess.run([*CLI, "up", "--role", str(role), "--workspace", str(ws), "--name", name,
                               "--network", "none", "--user", "1234:1234", "--",
                               "bash", "-c", "id -u; touch /workspace/x"],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        subprocess.run([*CLI, "down", name, role.stem, "--volumes"], capture_output=True)
    assert proc.stdout.startswith("1234\n"), proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Permission denied" in proc.stderr
    assert ("the agent runs as 1234:1234 and cannot write /workspace (owned by 0:0); "
            "start it with `capsule up --user 0:0` (the default)") in proc.stderr
    assert not (ws / "x").exists()
