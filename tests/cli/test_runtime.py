"""`capsule up --local`, `capsule shims install`, and the docker command line `capsule up` builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from capsule.cli.runtime import docker_run_argv
from capsule.policy.manifest import load_role


def cli(tmp_path, *args, env=None, cwd=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("JACKIN_CTX_", "CLAUDECODE", "CODEX_"))}
    full.update({"JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path / "home")})
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "capsule", *args], env=full, capture_output=True,
                          cwd=cwd or tmp_path, timeout=120)


def test_up_local_runs_the_agent_with_shims_first_and_its_exit_status(tmp_path):
    script = "command -v git; seq 1 3000 > /dev/null; git --version >/dev/null; echo $JACKIN_CTX_AGENT; exit 7"
    got = cli(tmp_path, "up", "--role", "python-dev", "--local", "--", "bash", "-c", script)
    assert got.returncode == 7, got.stderr
    lines = got.stdout.decode().splitlines()
    assert lines == [str(tmp_path / "state" / "shims" / "git"), "shell"]


def make_repo(root: Path, commits: int = 150) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    stream = b"".join(
        b"commit refs/heads/main\ncommitter Ada <ada@example.com> 1767225600 +0000\n"
        b"data %d\n%s\nM 644 inline f.txt\ndata %d\n%d\n\n" % (len(b"change %d of many" % i), b"change %d of many" % i,
                                                                len(b"%d" % i), i)
        for i in range(1, commits + 1))
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=stream, check=True)
    return root


def test_up_local_compresses_an_agent_commands_output(tmp_path):
    repo = make_repo(tmp_path / "repo")
    got = cli(tmp_path, "up", "--role", "python-dev", "--local", "--", "sh", "-c", "git log; echo done", cwd=repo)
    assert got.returncode == 0, got.stderr
    assert b"[full output: capsule ctx expand '<<ccr:" in got.stdout
    assert got.stdout.endswith(b"done\n")
    raw = cli(tmp_path, "up", "--role", "python-dev", "--local", "-e", "JACKIN_CTX_NO_SHIMS=1", "--",
              "sh", "-c", "git log", cwd=repo)
    assert raw.stdout.count(b"\ncommit ") == 149 and b"ccr:" not in raw.stdout


def test_up_local_shell_agent_programs_capture_the_real_bytes(tmp_path):
    """The shell agent's own stdout is its view; a program it runs that captures git gets git's bytes."""
    repo = make_repo(tmp_path / "repo")
    capture = ("import subprocess, sys; sys.stdout.buffer.write(b'%d\\n' % "
               "len(subprocess.run(['git', 'log'], capture_output=True).stdout))")
    script = f"git log | wc -c; python3 -c \"{capture}\"; git log"
    got = cli(tmp_path, "up", "--role", "python-dev", "--local", "--", "bash", "-c", script, cwd=repo)
    assert got.returncode == 0, got.stderr
    want = len(subprocess.run(["git", "log"], cwd=repo, capture_output=True).stdout)
    lines = got.stdout.splitlines()
    assert lines[:2] == [b"%d" % want] * 2
    assert b"[full output: capsule ctx expand '<<ccr:" in got.stdout


def test_shims_install_cli(tmp_path):
    got = cli(tmp_path, "shims", "install", str(tmp_path / "s"), "--socket", "/x/engine.sock")
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "s" / "git").is_symlink()
    # the compiled shim hands the agent's own view to the Python shim, which holds the socket path
    assert "DEFAULT_SOCKET = '/x/engine.sock'" in (tmp_path / "s" / "capsule-shim.py").read_text()


def test_bad_env_pair_is_a_usage_error(tmp_path):
    got = cli(tmp_path, "up", "--local", "-e", "NOEQUALS", "--", "true")
    assert got.returncode == 2 and b"expected VAR=VALUE" in got.stderr


def test_docker_run_argv_mounts_state_role_workspace_and_passes_switches(tmp_path, monkeypatch):
    monkeypatch.setenv("JACKIN_CTX_NO_MCP", "1")
    role = load_role("python-dev")
    argv = docker_run_argv(role, {"JACKIN_CTX_NO_SHIMS": "1"}, ["sleep", "1"], image="capsule:dev",
                           name="capsule-python-dev", workspace=Path("/w"), detach=True, interactive=False)
    joined = " ".join(argv)
    assert "-v capsule-state-python-dev:/state/context" in joined
    assert f"-v {role.path}:/etc/capsule/role.toml:ro" in joined
    assert "-v /w:/workspace" in joined and "-w /workspace" in joined
    assert "-e JACKIN_CTX_NO_SHIMS=1" in joined and "-e JACKIN_CTX_NO_MCP=1" in joined
    assert "--cpus 2 --memory 4g --pids-limit 1024" in joined
    assert argv[-3:] == ["--", "sleep", "1"] and "-d" in argv


def test_a_measure_only_up_says_that_output_stays_raw(tmp_path):
    got = cli(tmp_path, "up", "--role", "default", "--local", "--", "true")
    assert got.returncode == 0, got.stderr
    assert b"measure mode" in got.stderr and b"raw" in got.stderr
    quiet = cli(tmp_path, "up", "--role", "python-dev", "--local", "--", "true")
    assert b"measure mode" not in quiet.stderr
    switched = cli(tmp_path, "up", "--role", "python-dev", "--local", "-e", "JACKIN_CTX_MEASURE_ONLY=1", "--", "true")
    assert b"measure mode" in switched.stderr


def test_up_runs_the_agent_as_the_workspace_owner_or_the_override(tmp_path, monkeypatch):
    from capsule.ground.errors import UserError
    from capsule.cli.runtime import CAPABILITIES, run_as

    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 501, 20)
    assert str(run_as(ws, None)) == "501:20"                 # the owner, by default
    assert str(run_as(ws, "1234")) == "1234:1234"            # --user UID: gid = uid
    try:                                                     # never root over a workspace 501 owns (issue 31)
        run_as(ws, "0:0")
    except UserError as exc:
        assert "owned by 501:20" in str(exc)
    else:
        raise AssertionError("--user 0:0 accepted over a workspace 501:20 owns")
    for bad in ("agent", "501:", "-1", "1:2:3", "99999999999"):
        try:
            run_as(ws, bad)
        except UserError as exc:
            assert "expected UID or UID:GID" in str(exc) or "out of range" in str(exc)
        else:
            raise AssertionError(f"--user {bad!r} accepted")
    role = load_role("python-dev")
    argv = docker_run_argv(role, {}, [], image="capsule:dev", name="c", workspace=ws, detach=True,
                           interactive=False, user=run_as(ws, None))
    joined = " ".join(argv)
    # started as root so the supervisor can hand over the state volume, then it drops to 501:20
    assert "--user 0:0 --label capsule.user=501:20" in joined
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-e"][-1] == "JACKIN_CTX_RUN_AS=501:20"  # last: it wins
    assert "--security-opt no-new-privileges --cap-drop ALL" in joined
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--cap-add"] == list(CAPABILITIES)
    assert "NET_RAW" not in CAPABILITIES and "MKNOD" not in CAPABILITIES


def test_up_refuses_a_bad_user_before_docker_runs(tmp_path):
    got = cli(tmp_path, "up", "--role", "python-dev", "--user", "bob", "--workspace", str(tmp_path), "--", "true",
              env={"PATH": "/usr/bin:/bin"})
    assert got.returncode == 2, got.stderr
    assert b"--user 'bob': expected UID or UID:GID" in got.stderr
