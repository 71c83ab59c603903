"""How the supervisor points an agent at the proxy: Claude Code by env, Codex by `-c`, off by switch or
manifest, fail open when the proxy cannot start, and the real Claude Code under `capsule up --local`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from capsule.ground import switches
from capsule.policy.manifest import load_role
from capsule.proxy import redirect
from capsule.policy import plan as planning
from capsule.supervisor.core import Options, Supervisor
from recording import ScriptedMessages


def _role(tmp_path, kind="claude", extra=""):
    path = tmp_path / f"{kind}-role.toml"
    path.write_text(f'schema = 1\nname = "{kind}-proxy"\n[agent]\nkind = "{kind}"\n[context]\nmode = "standard"\n'
                    f'[context.subsystems]\nmcp = false\nregister = false\n{extra}')
    return load_role(path)


def test_plan_switch_and_manifest_turn_it_off(tmp_path):
    role = _role(tmp_path)
    assert planning.plan(role, switches.Switches.read({}))["proxy"].on
    off = planning.plan(role, switches.Switches.read({switches.NO_PROXY: "1"}))["proxy"]
    assert not off.on and off.reason == "switch JACKIN_CTX_NO_PROXY"
    manifest = planning.plan(_role(tmp_path, extra="proxy = false\n"), switches.Switches.read({}))["proxy"]
    assert not manifest.on and "proxy=false" in manifest.reason
    assert not planning.plan(_role(tmp_path, "shell"), switches.Switches.read({}))["proxy"].on


def test_codex_redirect_follows_its_provider(tmp_path):
    home = tmp_path / "codex"
    home.mkdir()
    env = {"CODEX_HOME": str(home), "OPENAI_API_KEY": "k"}
    r = redirect.redirect(redirect.upstream("codex", env), "http://127.0.0.1:1", "http://127.0.0.1:1/openai")
    assert r.upstream == "https://api.openai.com/v1" and r.args == ["-c", 'openai_base_url="http://127.0.0.1:1/openai"']
    (home / "config.toml").write_text('model_provider = "corp"\n[model_providers.corp]\nbase_url = "https://llm.corp/v1"\n'
                                      'wire_api = "responses"\n')
    r = redirect.redirect(redirect.upstream("codex", env), "http://127.0.0.1:1", "http://127.0.0.1:1/openai")
    assert r.upstream == "https://llm.corp/v1"
    assert r.args == ["-c", 'model_providers.corp.base_url="http://127.0.0.1:1/openai"']
    assert redirect.insert_args(["/usr/bin/codex", "exec", "hi"], r.args) == ["/usr/bin/codex", *r.args, "exec", "hi"]
    (home / "config.toml").write_text('model_provider = "corp"\n[model_providers.corp]\nbase_url = "https://x/v1"\n'
                                      'wire_api = "chat"\n')
    assert "chat" in redirect.upstream("codex", env).skip
    (home / "config.toml").write_text("")
    (home / "auth.json").write_text(json.dumps({"tokens": {"id_token": "t"}}))
    assert "ChatGPT" in redirect.upstream("codex", {"CODEX_HOME": str(home)}).skip
    (home / "config.toml").write_text("not = [toml")
    assert "unreadable" in redirect.upstream("codex", env).skip


def test_supervisor_points_claude_at_the_proxy_and_fails_open(tmp_path, state_dir, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/upstream")
    sup = Supervisor(Options(role=_role(tmp_path), command=["claude", "-p", "hi"]))
    sup._start_proxy()
    try:
        assert sup.proxy_info["state"] == "running" and sup.proxy_info["upstream"] == "http://127.0.0.1:9/upstream"
        assert sup.agent_env()["ANTHROPIC_BASE_URL"] == sup.proxy.url
        assert sup.status()["proxy"]["stats"]["requests"] == 0
    finally:
        sup.proxy.stop()
    # A proxy that cannot start (its memo store is unusable): the agent keeps its own base URL.
    other = state_dir.parent / "broken-state"
    (other / "proxy.db").mkdir(parents=True)
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(other))
    broken = Supervisor(Options(role=_role(tmp_path), command=["claude", "-p", "hi"]))
    broken._start_proxy()
    assert broken.proxy is None and broken.proxy_info["state"] == "failed"
    assert broken.agent_env()["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/upstream"


def _up(tmp_path, state_dir, fake, workspace, *env_flags):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
           "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-test-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1"}
    role = tmp_path / "claude-role.toml"
    if not role.exists():
        _role(tmp_path)
    claude = shutil.which("claude")
    assert claude, "claude is not installed; run scripts/setup-clients.sh"
    return subprocess.run([sys.executable, "-m", "capsule", "up", "--local", "--role", str(role), *env_flags,
                           "--workspace", str(workspace), "--", claude, "-p", "read it", "--allowedTools", "Read",
                           "--output-format", "json"], env=env, capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)


def test_capsule_up_local_runs_claude_code_through_the_proxy_unless_switched_off(tmp_path, state_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    text = "\n".join(f"2026-02-02 08:00:{i % 60:02d} INFO sync {i} done" for i in range(500)) + \
        "\n2026-02-02 08:09:00 ERROR sync 500 failed: permission denied\n"
    (ws / "sync.log").write_text(text)
    fake = ScriptedMessages([("Read", {"file_path": str(ws / "sync.log")})])
    try:
        proc = _up(tmp_path, state_dir, fake, ws)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads(proc.stdout)["result"] == fake.final
        result = json.loads(fake.conversation()[-1])["messages"][-1]["content"][0]["content"]
        assert "<<ccr:" in result and "ERROR sync 500 failed: permission denied" in result
        n = len(fake.raw)
        proc = _up(tmp_path, state_dir, fake, ws, "-e", "JACKIN_CTX_NO_PROXY=1")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert len(fake.raw) > n
        result = json.loads(fake.conversation()[-1])["messages"][-1]["content"][0]["content"]
        # Without the proxy the native Read is still shrunk, once, by Claude Code's PostToolUse hook
        # door (shims/hook_door.py); with the proxy on, the proxy leaves hook-owned results alone.
        assert result.count("<<ccr:") == 1 and "ERROR sync 500 failed" in result
    finally:
        fake.close()


def test_capsule_up_local_points_codex_at_the_proxy_by_command_line_only(tmp_path, state_dir):
    from recording import ScriptedResponses

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "sync.log").write_text("\n".join(f"2026-02-02 08:00:{i % 60:02d} INFO sync {i} done" for i in range(500))
                                 + "\n2026-02-02 08:09:00 ERROR sync 500 failed: permission denied\n")
    fake = ScriptedResponses([("exec_command", {"cmd": "cat sync.log"})])
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(fake.provider_config())
    config_before = (home / "config.toml").read_bytes()
    role = tmp_path / "codex-role.toml"
    role.write_text('schema = 1\nname = "codex-proxy"\n[agent]\nkind = "codex"\n[context]\nmode = "standard"\n'
                    '[context.subsystems]\nmcp = false\nregister = false\n')
    codex = shutil.which("codex")
    assert codex, "codex is not installed; run scripts/setup-clients.sh"
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), "CODEX_HOME": str(home), "HOME": str(tmp_path),
           "OPENAI_API_KEY": "sk-test-key"}
    try:
        proc = subprocess.run([sys.executable, "-m", "capsule", "up", "--local", "--role", str(role),
                               "-e", "JACKIN_CTX_NO_SHIMS=1", "--workspace", str(ws), "--", codex, "exec",
                               "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-m", "gpt-5.5",
                               "read it"], env=env, capture_output=True, text=True, timeout=240,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert fake.final in proc.stdout
        out = [i for i in fake.requests[-1]["input"] if i.get("type") == "function_call_output"][0]["output"]
        assert "<<ccr:" in out and "ERROR sync 500 failed: permission denied" in out
        assert (home / "config.toml").read_bytes() == config_before      # nothing permanent written
    finally:
        fake.close()
