"""Gemini CLI inside the capsule image (issue 30): the image's node is new enough for it (>= 20;
the CLI layer carries the host's node ahead of Debian's 18), and the e2e session of
tests/e2e/harness.py runs through it under `capsule up --role python-dev -- gemini --yolo -p …`.

The fake Gemini API listens on the gateway of a docker network made for this module; the user's
GOOGLE_GEMINI_BASE_URL names it, and inside the container the proxy door stands in for it. Plain
mode is the same session with the same client on the host, at the same time. Checked: every fact
at most 55% of plain's tokens, usage read from Gemini CLI's own chats equal to the fake's, and
nothing capsule's left in the user's Gemini home or the workspace.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.container.clients import PY, workspace
from tests.e2e import harness as h

CLI = [sys.executable, "-m", "capsule"]
ROLE = Path(__file__).resolve().parents[2] / "roles" / "python-dev.toml"
# The harness's session without its pytest call: the image has no pytest (bench_agents --container too)
CALLS = tuple(c for c in h.CALLS if c.name != "pytest")
GEMINI_HOME = ".gemini-home"              # the user's GEMINI_CLI_HOME, inside the workspace for this test
# What Gemini CLI writes for itself in any session, and what the session's own commands write (pytest)
CLIENT_OWN = (f"{GEMINI_HOME}/.gemini/tmp", f"{GEMINI_HOME}/.gemini/history", f"{GEMINI_HOME}/.gemini/projects.json",
              ".pytest_cache")


def _docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def _files(ws: Path) -> dict[str, str]:
    import hashlib

    out = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__")]
        for n in filenames:
            rel = os.path.relpath(os.path.join(dirpath, n), ws)
            if not rel.startswith(CLIENT_OWN):
                out[rel] = hashlib.sha256(Path(dirpath, n).read_bytes()).hexdigest()
    return out


def _container(image: str, root: Path) -> dict:
    net = name = f"capsule-gemini-{os.getpid()}"
    subprocess.run(["docker", "network", "create", net], check=True, capture_output=True)
    # python-dev under a name of its own: its state volume (capsule-state-ROLE) is this run's alone
    role = root / f"python-dev-gemini-{os.getpid()}.toml"
    role.write_text(ROLE.read_text().replace('name = "python-dev"', f'name = "{role.stem}"'))
    role.chmod(0o644)
    volume = f"capsule-state-{role.stem}"
    fake = None
    try:
        gateway = _docker("network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", net).stdout.strip()
        ws, head = workspace(root / "container", (1000, 1000))
        home = ws / GEMINI_HOME / ".gemini"
        home.mkdir(parents=True)
        (home / "settings.json").write_text(json.dumps(h.GEMINI_SETTINGS))
        for p in (ws / GEMINI_HOME, home, home / "settings.json"):
            os.chown(p, 1000, 1000)
        before = _files(ws)
        fake = type("GatewayFake", (h.FakeGeminiModel,), {"host": gateway})(CALLS)
        proc = subprocess.run([*CLI, "up", "--role", str(role), "--workspace", str(ws), "--network", net,
                               "--name", name, "-e", "GEMINI_API_KEY=test",
                               "-e", f"GOOGLE_GEMINI_BASE_URL=http://{gateway}:{fake.port}",
                               "-e", f"GEMINI_CLI_HOME=/workspace/{GEMINI_HOME}", "-e", "SHELL=/bin/bash",
                               "--", "gemini", "--yolo", "-p", h.PROMPT],
                              capture_output=True, text=True, timeout=h.TIMEOUT_S, stdin=subprocess.DEVNULL)
        probe = _docker("run", "--rm", "--network", "none", "-u", "0:0", "-v", f"{volume}:/state/context",
                        "--entrypoint", PY, image, "-c",
                        "import apsw, json; c = apsw.Connection('/state/context/usage.db'); print(json.dumps("
                        "c.execute(\"SELECT count(*), sum(input_tokens), sum(cache_read_input_tokens), "
                        "sum(output_tokens) FROM calls WHERE agent = 'gemini'\").fetchall()[0])); "
                        "print(open('/state/context/capsule.log').read())")
        return {"proc": proc, "results": fake.tool_results(), "facts": [h.facts_for(c, head) for c in CALLS],
                "log": list(fake.log), "probe": probe, "before": before, "after": _files(ws), "port": fake.port,
                "node": _docker("run", "--rm", "--network", "none", "--entrypoint", "node", image, "--version")}
    finally:
        subprocess.run([*CLI, "down", name, role.stem, "--volumes"], capture_output=True)
        _docker("volume", "rm", "-f", volume)
        _docker("network", "rm", net)
        if fake is not None:
            fake.close()


@pytest.fixture(scope="module")
def session(image, tmp_path_factory):
    root = tmp_path_factory.mktemp("gemini-in-image")
    root.chmod(0o755)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        cap = pool.submit(_container, image, root)
        plain = pool.submit(_plain)
        return {"container": cap.result(), "plain": plain.result()}


def _plain() -> h.Session:
    """The same session with the host's Gemini CLI, no capsule (its system settings need a directory
    whose every ancestor is the user's own: not /tmp)."""
    import shutil
    import tempfile

    base = Path(os.environ.get("CAPSULE_E2E_SECURE_TMP") or Path.home() / ".cache" / "capsule-e2e")
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    root = Path(tempfile.mkdtemp(prefix="gemini-plain-", dir=base))
    try:
        ws = root / "shop"
        ws.mkdir()
        head = h.build_workspace(ws)
        return h.run_gemini(ws, root / "home", "plain", head, CALLS)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_image_runs_gemini_cli_on_a_new_enough_node(session):
    node = session["container"]["node"]
    assert node.returncode == 0 and int(node.stdout.strip().lstrip("v").split(".")[0]) >= 20, node


def test_gemini_in_the_image_every_fact_at_most_55_percent_of_plain(session):
    cap, plain = session["container"], session["plain"]
    assert cap["proc"].returncode == 0, cap["proc"].stderr[-3000:]
    assert len(cap["results"]) == len(plain.results) == len(CALLS)
    tp = plain.tokens()
    tc = [h.count(h._RUN_NOISE.sub("", r)) for r in cap["results"]]
    table = "\n".join(f"{c.name:9} {p:>7} {q:>7}" for c, p, q in zip(CALLS, tp, tc))
    for i, call in enumerate(CALLS):
        missing = [f for f in cap["facts"][i] if f not in cap["results"][i]]
        assert not missing, f"{call.name}: missing {missing}\n{table}"
    assert sum(tc) / sum(tp) <= 0.55, f"{sum(tc)}/{sum(tp)} of plain\n{table}"
    print(f"\ngemini in the image: {sum(tc)}/{sum(tp)} = {sum(tc) / sum(tp):.2f} of plain\n{table}")
    log = cap["probe"].stdout
    assert f"for gemini (upstream http://" in log and f":{cap['port']})" in log   # through the proxy door


def test_usage_from_gemini_cli_chats_in_the_image_equals_the_fakes(session):
    cap = session["container"]
    assert cap["probe"].returncode == 0, cap["probe"].stderr
    usage = [e["usage"] for e in cap["log"]]
    want = [len(usage), sum(u["promptTokenCount"] - u["cachedContentTokenCount"] for u in usage),
            sum(u["cachedContentTokenCount"] for u in usage),
            sum(u["candidatesTokenCount"] + u["thoughtsTokenCount"] for u in usage)]
    assert json.loads(cap["probe"].stdout.splitlines()[0]) == want


def test_nothing_of_capsule_is_left_in_the_workspace_or_the_users_gemini_home(session):
    cap = session["container"]
    assert cap["after"] == cap["before"]
