"""`capsule up --local` says what it starts and what the session saved, on stderr only, and every
path capsule creates is owner-only under umask 022 (`up --local`, `ctx run`, the proxy; issue 33)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "capsule"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for i in range(30):
        (ws / f"f{i}").write_text(f"{i}\n")
        subprocess.run([*git, "-C", str(ws), "add", f"f{i}"], check=True)
        subprocess.run([*git, "-C", str(ws), "commit", "-qm", f"commit number {i} with a message"], check=True)
    return ws


def _umask022():
    os.umask(0o022)


def _run(args, state: Path, cwd: Path, **kw):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state), "HOME": str(state.parent / "home")}
    env.update(kw.pop("env", {}))
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          preexec_fn=_umask022, timeout=120, **kw)


def _readable_by_others(root: Path) -> list[str]:
    """Paths under root that group or others can reach: their own bits and every folder's on the way."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                continue
            chain = [path, *[p for p in path.parents if root in p.parents or p == root]]
            if all(os.stat(p).st_mode & 0o077 for p in chain):
                out.append(f"{stat.filemode(os.stat(path).st_mode)} {path.relative_to(root)}")
    return out


def test_up_local_prints_a_block_before_and_a_summary_after_on_stderr_only(repo, tmp_path):
    state = tmp_path / "state"
    got = _run(["up", "--local", "--role", "python-dev", "--", "bash", "-c", "git log; echo AGENT-OUT"], state, repo)
    assert got.returncode == 0, got.stderr
    assert got.stdout.rstrip().endswith("AGENT-OUT") and "capsule: role" not in got.stdout
    lines = got.stderr.splitlines()
    head = [line for line in lines if line.startswith("capsule: ")]
    assert head[0].startswith("capsule: role python-dev (") and "mode standard" in head[0] and "local" in head[0]
    assert head[1] == "capsule: agent bash (bash -c git log; echo AGENT-OUT)"
    assert head[2] == "capsule: doors: shims on, proxy on, mcp on, register on, routing on"
    assert head[3] == f"capsule: state {state}"
    m = re.fullmatch(r"capsule: agent exited 0: ([\d,]+) tokens saved over 1 emission \([\d.]+%\); "
                     r"more: capsule ctx gain --since \S+, capsule ctx report --since \S+", lines[-1])
    assert m and int(m.group(1).replace(",", "")) > 100, lines[-1]
    assert _readable_by_others(state) == []
    assert stat.S_IMODE(os.stat(state / "capsule.log").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state / "shims").st_mode) == 0o700


def test_ctx_run_under_umask_022_leaves_only_owner_only_paths(repo, tmp_path):
    state = tmp_path / "state"
    got = _run(["ctx", "run", "--", "git", "log"], state, repo)
    assert got.returncode == 0 and "commit number" in got.stdout
    from capsule.measure.ledger import Ledger    # its finisher has written the row when this returns

    os.environ["JACKIN_CTX_STATE_DIR"] = str(state)
    try:
        assert Ledger(state / "ledger.db", readonly=True).count() == 1
    finally:
        del os.environ["JACKIN_CTX_STATE_DIR"]
    assert _readable_by_others(state) == []


def test_proxy_under_umask_022_leaves_only_owner_only_paths(tmp_path):
    state = tmp_path / "state"
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state)}
    proc = subprocess.Popen([*CLI, "proxy", "serve", "--port", "0", "--anthropic-upstream", "http://127.0.0.1:9"],
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_umask022)
    try:
        first = proc.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", first).group()
        req = urllib.request.Request(f"{url}/v1/messages", method="POST", headers={"content-type": "application/json"},
                                     data=b'{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}')
        try:
            urllib.request.urlopen(req, timeout=30)
        except urllib.error.HTTPError as exc:      # the upstream is down: the proxy says so, 5xx
            assert exc.code >= 500
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert (state / "proxy.db").exists()
    assert _readable_by_others(state) == []


def test_up_in_a_container_says_what_it_starts_first(capsys, monkeypatch):
    from capsule.cli import runtime
    from capsule.policy.manifest import load_role

    monkeypatch.delenv("JACKIN_CTX_NO_MCP", raising=False)
    runtime._say_before_docker(load_role("python-dev"), {"JACKIN_CTX_NO_MCP": "1"}, [], "capsule:dev", "capsule-python-dev")
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("capsule: role python-dev (") and err[0].endswith(
        "mode standard, container capsule-python-dev from image capsule:dev")
    assert err[1] == "capsule: agent Claude Code (claude)"
    assert err[2] == "capsule: doors: shims on, proxy on, mcp off, register on, routing on"   # -e switches count
    assert err[3] == "capsule: state volume capsule-state-python-dev at /state/context"
