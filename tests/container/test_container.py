"""The capsule image in a real Docker engine: shims, engine, ledger, expand, signals, reaping,
kill switches, and manifest refusal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest


AGENT_CALL = {"JACKIN_CTX_AGENT": "claude", "CLAUDECODE": "1"}   # as in a Bash call of the Claude Code capsule launched
ENV_FILE = "/opt/capsule/shims/capsule-env.sh"
# An agent's tool call: a shell that sources the image's capsule-env.sh first (as Claude Code's
# CLAUDE_ENV_FILE and Codex's BASH_ENV do), so the call's output is the agent's view.
AGENT_SHELL = ["bash", "-c", f'. {ENV_FILE}\nexec "$@"', "agent-call"]
FOOTER = re.compile(rb"\[full output: capsule ctx expand '(<<ccr:[0-9a-f]+>>)'\]")
SLEEP = ["sleep", "infinity"]


@pytest.fixture(scope="module")
def capsule(start):
    return start(SLEEP)


def git_log(cap, env=None):
    return cap.exec([*(AGENT_SHELL if env else []), "git", "log"], env=env, workdir="/repo")


def test_git_log_through_the_shim_is_compressed_with_footer_and_ledger_row(capsule):
    rc_raw, raw, _ = git_log(capsule)                 # not an agent call: raw
    before = len(capsule.ledger())
    rc, out, err = git_log(capsule, AGENT_CALL)       # Claude Code's Bash tool marks its calls
    assert rc == rc_raw == 0
    assert raw.count(b"\ncommit ") + 1 == 150
    assert len(out) < len(raw), out[-400:]
    assert FOOTER.search(out), out[-400:]
    rows = capsule.ledger()[before:]
    assert [r[0] for r in rows] == ["git log"]
    command, applied, handle, exit_code, mode = rows[0]
    assert applied == 1 and exit_code == 0 and mode == "standard" and handle


def test_codex_login_snapshot_and_bash_env_reach_the_shims_in_the_image(capsule):
    """Codex builds its tool shell's PATH from a login shell (/etc/profile resets PATH, then
    /etc/profile.d/capsule.sh) and runs `bash -c` with BASH_ENV: the shims come first and the
    direct call is compressed, while a program's capture inside the same call gets git's bytes."""
    rc, path, _ = capsule.exec(["bash", "-lc", "echo $PATH"], env={"PATH": "/usr/bin:/bin"})
    assert rc == 0 and path.decode().split(":")[0] == "/opt/capsule/shims", path
    _, raw, _ = git_log(capsule)
    env = {"PATH": path.decode().strip(), "BASH_ENV": ENV_FILE, "JACKIN_CTX_AGENT": "codex", "CODEX_THREAD_ID": "t-1", "CODEX_TOOL_CALL_ID": "c-1"}
    capture = "import subprocess, sys; sys.stdout.buffer.write(subprocess.run(['git', 'log'], capture_output=True).stdout)"
    rc, out, _ = capsule.exec(["bash", "-c", f"python3 -c \"{capture}\" > /tmp/captured; git log"], env=env,
                              workdir="/repo")
    assert rc == 0 and FOOTER.search(out) and len(out) < len(raw), out[-300:]
    assert capsule.exec(["cat", "/tmp/captured"])[1] == raw


def test_expand_returns_the_original_byte_exact(capsule):
    _, raw, _ = git_log(capsule)
    _, out, _ = git_log(capsule, AGENT_CALL)
    handle = FOOTER.search(out).group(1).decode()
    rc, expanded, err = capsule.exec(["capsule", "ctx", "expand", handle])
    assert rc == 0, err
    assert expanded == raw


def test_exit_code_passes_through_the_shim_bit_exact(capsule):
    rc, out, err = capsule.exec([*AGENT_SHELL, "git", "log", "--no-such-flag"], env=AGENT_CALL, workdir="/repo")
    rc_raw, out_raw, err_raw = capsule.exec(["git", "log", "--no-such-flag"], workdir="/repo")
    assert rc == rc_raw == 128
    assert err == err_raw  # an error is never compressed (INV-7)


def test_supervisor_is_pid_1_and_the_socket_is_owner_only(capsule):
    rc, out, _ = capsule.exec("cat /proc/1/cmdline | tr '\\0' ' '; echo; stat -c '%a %U' /state/context/engine.sock; id -un")
    cmdline, sock, user = out.decode().splitlines()
    assert "capsule supervise" in cmdline
    assert sock == "600 agent" and user == "agent"


def test_orphans_are_reaped_by_pid_1(capsule):
    before = capsule.status()["reaped"]
    rc, out, _ = capsule.exec(
        "for i in $(seq 300); do (sleep 0.05 &); done; (sleep 30 &); sleep 0.3; "
        "ps -eo pid=,ppid=,args= | awk '$3==\"sleep\" && $4==\"30\" {print $2}'; sleep 2; "
        "ps -eo stat= | grep -c '^Z' || true")
    parents, zombies = out.decode().split()
    assert parents == "1", "orphans are re-parented to the supervisor"
    assert zombies == "0"
    assert capsule.status()["reaped"] >= before + 300


def test_doctor_inside_the_container(capsule):
    rc, out, err = capsule.exec(["capsule", "ctx", "doctor", "--json"])
    assert rc == 0, err
    import json
    report = json.loads(out)
    assert report["role"]["name"] == "python-dev" and report["mode"] == "standard"
    assert report["supervisor"]["pid"] == 1
    assert report["shims"]["first_on_path"] and report["shims"]["dirs"] == ["/opt/capsule/shims"]
    assert report["state"]["ledger"]["integrity"] == "ok" and report["state"]["archive"]["integrity"] == "ok"
    assert report["conflicts"] == []


@pytest.mark.parametrize("trap, expected", [
    ("trap 'echo agent-got-TERM; exit 42' TERM; while :; do sleep 0.1; done", 42),
    ("exec sleep infinity", 128 + 15),
])
def test_sigterm_reaches_the_agent_and_its_status_comes_out(start, trap, expected):
    cap = start(["bash", "-c", trap])
    time.sleep(0.5)
    cap.raw.kill(signal="SIGTERM")
    assert cap.wait_exit() == expected
    if expected == 42:
        assert "agent-got-TERM" in cap.logs()


SWITCH_ROLE = """\
schema = 1
name = "switches"
[agent]
kind = "claude"
model = "m-test"
command = ["bash", "-c", "echo \\"$@\\" > /tmp/agent-args; exec sleep infinity", "agent"]
[context]
mode = "standard"
[context.routing]
effort_default = "low"
"""

# switch -> (compressed, ledger row, applied, registered with claude, --model/--effort passed)
SWITCHES = {
    None: (True, True, 1, True, True),
    "JACKIN_CTX_DISABLE": (False, False, None, False, False),
    "JACKIN_CTX_NO_SHIMS": (False, False, None, True, True),
    "JACKIN_CTX_MEASURE_ONLY": (False, True, 0, True, True),
    "JACKIN_CTX_NO_MCP": (True, True, 1, False, True),
    "JACKIN_CTX_NO_REGISTER": (True, True, 1, True, True),     # the output register's switch, not MCP's
    "JACKIN_CTX_NO_ROUTING": (True, True, 1, True, False),
}


@pytest.fixture(scope="module")
def switch_role(tmp_path_factory):
    path = tmp_path_factory.mktemp("role") / "switches.toml"
    path.write_text(SWITCH_ROLE)
    path.chmod(0o644)
    return path


@pytest.mark.parametrize("switch", list(SWITCHES), ids=lambda s: s or "baseline")
def test_each_kill_switch_changes_behaviour(start, switch_role, switch):
    compressed, row, applied, registered, model = SWITCHES[switch]
    cap = start(None, env={switch: "1"} if switch else {}, role=switch_role)
    _, raw, _ = git_log(cap)
    rc, out, _ = git_log(cap, AGENT_CALL)
    assert rc == 0
    assert bool(FOOTER.search(out)) is compressed
    if not compressed:
        assert out == raw
    rows = cap.ledger()
    assert len(rows) == (1 if row else 0), rows
    if row:
        assert rows[0][1] == applied
    claude_json = cap.exec(["cat", "/home/agent/.claude.json"])
    assert (claude_json[0] == 0 and b'"capsule"' in claude_json[1]) is registered
    _, args, _ = cap.exec("for i in $(seq 100); do [ -s /tmp/agent-args ] && break; sleep 0.1; done; cat /tmp/agent-args")
    assert (args.strip() == b"--model m-test --effort low") is model, args


def test_bad_manifest_is_refused_and_no_container_is_left(image, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('schema = 1\nname = "bad"\n[agent]\nkind = "shell"\n[context]\nmode = "turbo"\n')
    bad.chmod(0o644)
    name = "capsule-bad-manifest-test"
    proc = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", str(bad), "--detach",
                           "--name", name, "--", "sleep", "infinity"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"role {bad} line 6: bad value for \"context.mode\": 'turbo'" in proc.stderr
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={name}"], capture_output=True, text=True)
    assert left.stdout.strip() == ""
    # The supervisor inside refuses it too (exit 2), before starting anything.
    run = subprocess.run(["docker", "run", "--rm", "-v", f"{bad}:/etc/capsule/role.toml:ro",
                          "-e", "JACKIN_CTX_ROLE=/etc/capsule/role.toml", image, "--", "touch", "/tmp/x"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "bad value for \"context.mode\"" in run.stderr


def test_capsule_up_detach_ps_logs_down(image, tmp_path):
    name = "capsule-up-test"
    env_cli = [sys.executable, "-m", "capsule"]
    subprocess.run([*env_cli, "down", name, "--volumes"], capture_output=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 1000, 1000)          # `up` refuses a root-owned workspace (issue 31)
    up = subprocess.run([*env_cli, "up", "--role", "default", "--workspace", str(ws), "--detach", "--name", name,
                         "-e", "JACKIN_CTX_NO_SHIMS=1", "--", "bash", "-c",
                         "echo $JACKIN_CTX_NO_SHIMS > /workspace/seen; exec sleep infinity"],
                        capture_output=True, text=True, timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        deadline = time.monotonic() + 30
        while not ((ws / "seen").exists() and (ws / "seen").read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (ws / "seen").read_text() == "1\n"  # -e reaches the agent
        ps = subprocess.run([*env_cli, "ps"], capture_output=True, text=True)
        assert name in ps.stdout and "default" in ps.stdout
        logs = subprocess.run([*env_cli, "logs", name], capture_output=True, text=True)
        assert logs.returncode == 0
        vol = subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True).stdout.split()
        assert "capsule-state-default" in vol
    finally:
        down = subprocess.run([*env_cli, "down", name, "--volumes"], capture_output=True, text=True)
    assert down.returncode == 0
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={name}"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_up_local_works_from_the_installed_wheel(capsule):
    # The image holds a plain `pip install` of the wheel: `capsule up --local` there is the
    # README's embedded command on a laptop (its own state dir, not the PID-1 supervisor's).
    env = {"JACKIN_CTX_STATE_DIR": "/tmp/local-state", "JACKIN_CTX_SOCKET": "/tmp/local-state/engine.sock"}
    rc, out, err = capsule.exec(["capsule", "up", "--role", "python-dev", "--local", "--", "bash", "-c",
                                 "command -v git; git log; exit 3"], env=env, workdir="/repo")
    assert rc == 3, err
    first, _, rest = out.partition(b"\n")
    assert first == b"/tmp/local-state/shims/git"
    assert FOOTER.search(rest)


def test_two_roles_side_by_side_share_nothing_but_the_image(image, repo):
    cli = [sys.executable, "-m", "capsule"]
    names = {"python-dev": "capsule-side-a", "aggressive": "capsule-side-b"}
    try:
        for role, name in names.items():
            subprocess.run([*cli, "down", name, "--volumes"], capture_output=True)
            # the repo is root's: the agent runs as the image's user (`up` refuses root by default, issue 31)
            up = subprocess.run([*cli, "up", "--role", role, "--workspace", str(repo), "--detach", "--name", name,
                                 "--user", "1000:1000", "--", "sleep", "infinity"], capture_output=True, text=True,
                                timeout=120)
            assert up.returncode == 0, up.stderr
        for role, name in names.items():
            probe = ("from capsule.supervisor.control_server import wait_ready, status; import json; "
                     "wait_ready('/state/context/engine.sock', 60); print(json.dumps(status('/state/context/engine.sock')))")
            out = subprocess.run(["docker", "exec", name, "/opt/capsule/venv/bin/python", "-c", probe],
                                 capture_output=True, text=True, timeout=120)
            assert f'"role": "{role}"' in out.stdout, out.stderr
        # a row in one role's ledger does not appear in the other's
        subprocess.run(["docker", "exec", "-e", "CLAUDECODE=1", "-e", "JACKIN_CTX_AGENT=claude", "-w", "/workspace", names["python-dev"], *AGENT_SHELL,
                        "git", "log"],
                       capture_output=True, timeout=120, check=True)
        count = ("import apsw; print(apsw.Connection('/state/context/ledger.db').execute("
                 "'select count(*) from emissions').fetchall()[0][0])")
        rows = {role: subprocess.run(["docker", "exec", name, "/opt/capsule/venv/bin/python", "-c", count],
                                     capture_output=True, text=True, timeout=60).stdout.strip()
                for role, name in names.items()}
        assert rows == {"python-dev": "1", "aggressive": "0"}
        mounts = {role: subprocess.run(["docker", "inspect", "-f",
                                        '{{range .Mounts}}{{if eq .Destination "/state/context"}}{{.Name}}{{end}}{{end}}',
                                        name], capture_output=True, text=True).stdout.strip()
                  for role, name in names.items()}
        assert mounts == {"python-dev": "capsule-state-python-dev", "aggressive": "capsule-state-aggressive"}
    finally:
        for name in names.values():
            subprocess.run([*cli, "down", name, "--volumes"], capture_output=True)


def test_down_volumes_removes_the_state_volume_a_foreground_up_left(image):
    """A foreground `up` removes its container (--rm) but keeps capsule-state-ROLE: down must find it."""
    vol = "capsule-state-downtest"
    subprocess.run(["docker", "volume", "create", vol], check=True, capture_output=True)
    down = subprocess.run([sys.executable, "-m", "capsule", "down", "downtest", "--volumes"],
                          capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    assert vol in down.stderr
    left = subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True).stdout.split()
    assert vol not in left
