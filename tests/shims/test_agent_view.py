"""Only the agent's own view changes (issue 9.1): a shim transforms output only when its stdout is
the very file the agent's tool call reads, as recorded by the agent's shell (capsule-env.sh).

Real git on a small fixture repository, real bash, a real make; the "agent's tool call" is a bash
started the way each client starts it (Claude Code: output to a file, env file evaluated after the
snapshot; Codex: pipes, BASH_ENV). Programs inside the call get git's bytes untouched.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from capsule import shims

LOG = "git log -n 40 --stat"
FOOTER = b"capsule ctx expand '<<ccr:"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    ws = tmp_path_factory.mktemp("repo")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "ana@example.com",
           "GIT_COMMITTER_NAME": "Ana", "GIT_COMMITTER_EMAIL": "ana@example.com"}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, env=env, check=True)
    for n in range(45):
        for k in range(3):
            (ws / f"module_{(n + k) % 17}.py").write_text(f"# revision {n}\n" * (n + k + 1))
        subprocess.run(["git", "add", "-A"], cwd=ws, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"module {n}: revision {n}"], cwd=ws, env=env, check=True,
                       capture_output=True)
    return ws


@pytest.fixture(scope="module")
def agent(shimenv, repo, tmp_path_factory):
    shim_dir = tmp_path_factory.mktemp("gitshims")
    shims.install(shim_dir, names=["git"], socket=str(shimenv.socket))
    env_file = shim_dir / shims.ENV_FILE
    raw = subprocess.run(["/usr/bin/git", *LOG.split()[1:]], cwd=repo, capture_output=True, check=True).stdout
    assert raw.count(b"\ncommit ") == 39  # a long output: an agent call of it is compressed

    class Agent:
        def __init__(self):
            self.raw, self.env_file, self.shim_dir = raw, env_file, shim_dir

        def env(self, client: str) -> dict[str, str]:
            e = {k: v for k, v in os.environ.items()
                 if not k.startswith(("JACKIN_CTX_", "CLAUDE", "CODEX_", "BASH_ENV"))}
            e.update(PATH=f"{shim_dir}:/usr/bin:/bin", JACKIN_CTX_SOCKET=str(shimenv.socket),
                     GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", PYTHON=sys.executable)
            if client == "claude":
                e.update(JACKIN_CTX_AGENT="claude", CLAUDECODE="1", CLAUDE_CODE_SESSION_ID="s-1", CLAUDE_ENV_FILE=str(env_file))
            else:
                e.update(JACKIN_CTX_AGENT="codex", CODEX_THREAD_ID="t-1", CODEX_TOOL_CALL_ID="call_7", BASH_ENV=str(env_file))
            return e

        def call(self, client: str, command: str, tmp_path) -> bytes:
            """Run `command` as that client's Bash tool runs it; returns what the model would see."""
            env = self.env(client)
            if client == "claude":  # one output file for stdout and stderr; env file inlined after the snapshot
                script = f"true && {env_file.read_text()}\n: && eval {shlex_quote(command)} < /dev/null"
                out = tmp_path / "task.output"
                with open(out, "wb") as f:
                    r = subprocess.run(["bash", "-c", script], cwd=repo, env=env, stdout=f, stderr=f, timeout=60)
                data = out.read_bytes()
            else:  # plain pipes; bash reads BASH_ENV itself
                r = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True, timeout=60,
                                   stdin=subprocess.DEVNULL)
                data = r.stdout + r.stderr
            assert r.returncode == 0, data[-500:]
            return data

    return Agent()


def shlex_quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


CAPTURE = textwrap.dedent("""\
    import subprocess, sys
    r = subprocess.run(sys.argv[2:], capture_output=True)
    open(sys.argv[1], "wb").write(r.stdout)
""")
MAKE_LIKE = textwrap.dedent("""\
    import subprocess, sys
    out = subprocess.check_output(["sh", "-c", sys.argv[2]])
    open(sys.argv[1], "wb").write(out)
    print("built")
""")
CAPFD = textwrap.dedent("""\
    import os, subprocess, sys, tempfile
    # what pytest's capfd does: point fd 1 at a temp file, run the program, read the file back
    saved, tmp = os.dup(1), tempfile.TemporaryFile()
    os.dup2(tmp.fileno(), 1)
    subprocess.run(sys.argv[2:])
    os.dup2(saved, 1)
    tmp.seek(0)
    open(sys.argv[1], "wb").write(tmp.read())
""")

PROGRAMS = {
    "subprocess capture": ('"$PYTHON" capture.py OUT ' + LOG, False),
    "pipe": (LOG + " | cat > OUT", False),
    "command substitution": ('x="$(' + LOG + ')"; printf "%s\\n" "$x" > OUT', False),
    "redirection": (LOG + " > OUT", False),
    "xargs": ("echo 40 | xargs git log --stat -n > OUT", False),
    "make-like parent": ('"$PYTHON" make_like.py OUT "' + LOG + '"', False),
    "real make": ("make -s -f capture.mk DEST=OUT", False),
    "capfd-style dup2": ('"$PYTHON" capfd.py OUT ' + LOG, False),
    "tee": (LOG + " | tee OUT > /dev/null", False),
}


@pytest.mark.parametrize("client", ["claude", "codex"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_inside_an_agent_call_get_the_real_bytes(agent, repo, tmp_path, client, name):
    for fname, body in (("capture.py", CAPTURE), ("make_like.py", MAKE_LIKE), ("capfd.py", CAPFD)):
        (repo / fname).write_text(body)
    (repo / "capture.mk").write_text(f"all:\n\t{LOG} > $(DEST)\n\t@echo made\n")
    out = tmp_path / "captured.bin"
    command = PROGRAMS[name][0].replace("OUT", str(out))
    agent.call(client, command, tmp_path)
    got = out.read_bytes()
    want = agent.raw.rstrip(b"\n") + b"\n" if name == "command substitution" else agent.raw
    assert FOOTER not in got
    assert got == want, f"{name} under {client}: {len(got)} bytes, the real output has {len(want)}"


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_the_same_command_run_directly_by_the_agent_is_compressed(agent, tmp_path, client):
    seen = agent.call(client, LOG, tmp_path)
    assert FOOTER in seen and len(seen) < len(agent.raw)


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_a_nested_shell_keeps_the_calls_record(agent, tmp_path, client):
    """`bash -c '…' > file` inside the call re-reads BASH_ENV: it must not adopt the file as the view."""
    out = tmp_path / "nested.bin"
    agent.call(client, f"bash -c '{LOG}' > {out}; bash -c '{LOG}' | cat > {out}.2", tmp_path)
    assert out.read_bytes() == agent.raw
    assert (tmp_path / "nested.bin.2").read_bytes() == agent.raw


def test_without_a_recorded_view_an_agent_marker_alone_changes_nothing(agent, repo):
    """A program run under CLAUDECODE=1 (no tool-call shell around it) captures the real bytes."""
    env = agent.env("claude")
    env.pop("CLAUDE_ENV_FILE")
    r = subprocess.run(LOG.split(), cwd=repo, env=env, capture_output=True)
    assert r.stdout == agent.raw


def test_stderr_redirected_elsewhere_keeps_its_bytes(shimenv, tmp_path):
    """fd 1 is the agent's, fd 2 goes to a log: stdout may shrink, the log gets the real stderr."""
    env_file = tmp_path / "shims" / shims.ENV_FILE
    shims.install(tmp_path / "shims", names=["talk"], socket=str(shimenv.socket))
    env = shimenv.env(JACKIN_CTX_AGENT="claude", CLAUDECODE="1", PATH=f"{tmp_path / 'shims'}:{shimenv.real_dir}:/usr/bin:/bin")
    log = tmp_path / "err.log"
    r = subprocess.run(["bash", "-c", f". {env_file}; talk 3000 2000 2> {log}"], env=env, capture_output=True)
    want = subprocess.run([str(shimenv.real_dir / "talk"), "3000", "2000"], capture_output=True)
    assert FOOTER in r.stdout
    assert log.read_bytes() == want.stderr
