"""`capsule up --local` leaves the user's home and repository as it found them (issue 9.7).

The real Claude Code and Codex run one scripted call under capsule with HOME in a tmp dir that holds
the user's own config and the client's own files from one plain session; afterwards (and after a SIGKILL of the session) every file outside capsule's
state dir and the clients' own session records is byte-identical, and `ctx doctor` lists nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e import harness

from capsule.prompt import pack

ONE_CALL = (harness.Call("git log", "git log --oneline -3", "Show the last three commits", (harness.HEAD_SUBJECT,)),)
# What the clients write for themselves in any session (plain mode too): not capsule's doing.
CLIENT_OWN = (".claude/projects", ".claude/plugins", ".claude/shell-snapshots", ".claude/session-env", ".claude/sessions",
              ".claude/backups", ".claude/statsig", ".claude/todos", ".claude/.last-cleanup", ".cache",
              ".codex/sessions", ".codex/log", ".codex/history.jsonl", ".codex/state", ".codex/.tmp",
              ".codex/tmp", ".codex/sqlite", ".codex/cache", ".codex/models_cache.json", ".codex/version.json",
              ".codex/installation_id", ".local/state/capsule", ".pytest_cache")


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if not any(os.path.normpath(os.path.join(rel_dir, d)).startswith(p)
                                                      for p in CLIENT_OWN + (".git",))]
        for name in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if any(rel.startswith(p) for p in CLIENT_OWN) or rel.startswith(".codex/") and rel.endswith((".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal")):
                continue
            path = Path(dirpath) / name
            if rel == ".claude.json":   # Claude Code rewrites its own counters: compare what capsule could add
                data = json.loads(path.read_text())
                servers = {k: sorted(v.get("mcpServers", {})) for k, v in (data.get("projects") or {}).items()}
                out[rel] = json.dumps([sorted(data.get("mcpServers", {})), servers])
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _user(tmp_path: Path, client: str = "claude") -> tuple[Path, Path, str]:
    """A user's home and repository, after one plain session of `client` (its own files are in place)."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir(parents=True)
    head = harness.build_workspace(ws)
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}}))
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"theirs": {"command": "true"}}}))
    (ws / "CLAUDE.md").write_text("# House rules\n\nTabs, never spaces.\n")
    harness.RUNNERS[client](ws, home, "plain", head, ONE_CALL)
    return home, ws, head


def _doctor_outside(home: Path, ws: Path) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor", "--json"], cwd=ws, capture_output=True,
                          text=True, env=harness.base_env(home), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["outside_state"]


def test_claude_code_session_is_configured_by_flags_and_leaves_no_trace(tmp_path):
    home, ws, head = _user(tmp_path)
    before = _snapshot(home), _snapshot(ws)
    s = harness.run_claude(ws, home, "capsule", head, ONE_CALL)
    assert harness.HEAD_SUBJECT in s.results[0]
    assert s.saw(pack.data()["read_door"]["text"]) and s.offered("mcp__capsule__ctx_read")   # the session had capsule
    assert (_snapshot(home), _snapshot(ws)) == before
    assert _doctor_outside(home, ws) == []
    assert not list((home / ".local/state/capsule/sessions").glob("[0-9]*"))   # the session dir went too


def test_codex_session_is_configured_by_overrides_and_leaves_no_trace(tmp_path):
    home, ws, head = _user(tmp_path, "codex")
    before = _snapshot(home), _snapshot(ws)
    s = harness.run_codex(ws, home, "capsule", head, ONE_CALL)   # writes the same provider config again
    assert harness.HEAD_SUBJECT in s.results[0]
    assert s.saw(pack.data()["read_door"]["text"]) and s.saw("Deferred tool namespaces:\\n- mcp__capsule")
    after = _snapshot(home)
    before[0].pop(".codex/config.toml"), after.pop(".codex/config.toml")  # the fake's port differs per run
    assert (after, _snapshot(ws)) == before
    assert "mcp_servers" not in (home / ".codex" / "config.toml").read_text()
    assert _doctor_outside(home, ws) == []


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _running(root: int, cmdline: str) -> bool:
    """Whether a descendant of `root` runs `cmdline` now (the tool call is in flight, not finished)."""
    todo = _children(root)
    while todo:
        pid = todo.pop()
        try:
            if cmdline.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "):
                return True
        except OSError:
            continue
        todo += _children(pid)
    return False


def test_sigkill_of_the_session_leaves_no_trace_and_the_next_start_cleans_state(tmp_path):
    home, ws, head = _user(tmp_path)
    before = _snapshot(home), _snapshot(ws)
    # not a leading `sleep`: Claude Code 2.1.332 blocks those in the foreground
    hold = (harness.Call("sleep", "python3 -c 'import time; time.sleep(60)'", "Wait", ()),)
    fake = harness.FakeClaudeModel(hold)
    env = {**harness.base_env(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}", "ANTHROPIC_API_KEY": "test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    sessions = home / ".local/state/capsule/sessions"
    proc = subprocess.Popen(harness.capsule_prefix() + [harness.client_path("claude"), "-p", "go", "--allowedTools",
                                                          "Bash"], cwd=ws, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    agent = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _running(proc.pid, "time.sleep(60)"):
            time.sleep(0.2)
        assert _running(proc.pid, "time.sleep(60)"), "the session never reached its tool call"
        assert (sessions / str(proc.pid) / "settings.json").is_file()
        agent = _children(proc.pid)[0]
    finally:
        os.kill(proc.pid, signal.SIGKILL)          # the supervisor: no cleanup of its own can run
        proc.wait()
        if agent:
            os.killpg(agent, signal.SIGKILL)       # the agent's own group (it is not ours to outlive us)
        fake.close()
    assert (sessions / str(proc.pid)).is_dir()     # left in the state dir, nowhere else
    assert (_snapshot(home), _snapshot(ws)) == before
    harness.run_claude(ws, home, "capsule", head, ONE_CALL)
    assert not (sessions / str(proc.pid)).exists()
    assert (_snapshot(home), _snapshot(ws)) == before
