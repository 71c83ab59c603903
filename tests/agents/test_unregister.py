"""`capsule mcp register` writes only what it documents and nothing in the repository unless asked;
`capsule mcp unregister` puts HOME and the repository back byte for byte (issue 33)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "capsule"]


def _tree(root: Path) -> dict[str, tuple]:
    """Every file's bytes and mode and every folder under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = ("dir",)
        for f in filenames:
            p = Path(dirpath) / f
            out[os.path.relpath(p, root)] = (p.read_bytes(), p.stat().st_mode & 0o7777)
    return out


def test_register_then_unregister_leaves_home_and_repo_byte_identical(tmp_path):
    home, repo, state = tmp_path / "home", tmp_path / "repo", tmp_path / "state"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{\n  "permissions": {"allow": ["Bash(ls:*)"]}\n}\n')
    (home / ".claude.json").write_text('{"mcpServers": {"theirs": {"command": "true"}}, "numStartups": 3}')
    os.chmod(home / ".claude.json", 0o640)
    repo.mkdir()
    (repo / "README.md").write_text("# mine\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {**os.environ, "HOME": str(home), "JACKIN_CTX_STATE_DIR": str(state)}
    for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        env.pop(k, None)
    home_before, repo_before = _tree(home), _tree(repo)

    def capsule(*args):
        proc = subprocess.run([*CLI, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    for agent in ("claude", "codex"):
        capsule("mcp", "register", "--agent", agent)
        capsule("mcp", "register", "--agent", agent)                 # idempotent: the first original is kept
    assert _tree(repo) == repo_before                                # no ./CLAUDE.md, no ./AGENTS.md
    assert "capsule" in json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert (home / ".codex" / "config.toml").is_file() and (home / ".claude" / "CLAUDE.md").is_file()
    out = capsule("mcp", "unregister", "--agent", "claude") + capsule("mcp", "unregister", "--agent", "codex")
    assert "restored" in out and "removed" in out
    assert _tree(home) == home_before and _tree(repo) == repo_before
    assert "nothing to undo" in capsule("mcp", "unregister", "--agent", "claude")


def test_project_note_only_when_asked_and_a_file_changed_since_is_left_alone(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    env = {**os.environ, "HOME": str(home), "JACKIN_CTX_STATE_DIR": str(tmp_path / "state")}
    for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        env.pop(k, None)
    run = lambda *a: subprocess.run([*CLI, *a], cwd=repo, env=env, capture_output=True, text=True, timeout=60)  # noqa: E731
    assert run("mcp", "register", "--agent", "claude", "--note", "project").returncode == 0
    assert (repo / "CLAUDE.md").is_file()
    (repo / "CLAUDE.md").write_text((repo / "CLAUDE.md").read_text() + "my own line\n")
    out = run("mcp", "unregister", "--agent", "claude").stdout
    assert "changed since capsule wrote it; left as it is" in out and "my own line" in (repo / "CLAUDE.md").read_text()
    assert not (home / ".claude.json").exists()
