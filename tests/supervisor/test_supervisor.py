"""The supervisor: exit status, signal forwarding to the agent's group, reaping, stragglers, socket."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import textwrap
import time

import pytest

from capsule.supervisor import control_server
from capsule.supervisor.pid1 import exit_code

AGENT = textwrap.dedent("""
    import os, signal, sys, time
    log = open(sys.argv[1], "a", buffering=1)
    def on(sig, frame):
        log.write(f"{signal.Signals(sig).name} pgid={os.getpgrp()}\\n")
        if sig == signal.SIGTERM:
            sys.exit(42)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2, signal.SIGWINCH):
        signal.signal(s, on)
    log.write(f"ready pid={os.getpid()} pgid={os.getpgrp()} ppid={os.getppid()}\\n")
    while True:
        time.sleep(0.05)
""")


@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_exit_status_is_the_agents(supervise, code):
    assert supervise("sh", "-c", f"exit {code}").finish() == code


def test_agent_killed_by_signal_gives_128_plus_n(supervise):
    assert supervise("sh", "-c", "kill -USR1 $$").finish() == 128 + signal.SIGUSR1
    assert exit_code(signal.SIGKILL) == 128 + 9


def test_missing_agent_command_is_127(supervise):
    run = supervise("no-such-agent-command-xyz")
    assert run.finish() == 127
    assert "agent command not found" in run.proc.stderr.read()


def test_signals_are_forwarded_to_the_agents_process_group(supervise, tmp_path):
    log = tmp_path / "signals.log"
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    run = supervise(sys.executable, str(script), str(log))
    run.wait_for(log)
    time.sleep(0.2)
    first = log.read_text().splitlines()[0]
    agent_pid = int(first.split()[1].split("=")[1])
    assert f"pgid={agent_pid}" in first, "the agent leads its own process group"
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH):
        run.proc.send_signal(sig)
        deadline = time.monotonic() + 10
        while sig.name not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert f"{sig.name} pgid={agent_pid}" in log.read_text()
    run.proc.send_signal(signal.SIGTERM)
    assert run.finish() == 42
    assert "SIGTERM" in log.read_text()


def test_orphans_reaped_under_a_fork_storm(supervise, tmp_path):
    # The agent double-forks 300 short-lived orphans; they are re-parented to the supervisor
    # (subreaper here, PID 1 in the container). The agent then counts zombies whose parent is the
    # supervisor and exits with that count.
    agent = textwrap.dedent("""
        import os, time
        sup = os.getppid()
        for _ in range(300):
            if os.fork() == 0:
                if os.fork() == 0:
                    time.sleep(0.05)
                    os._exit(0)
                os._exit(0)
            os.waitpid(-1, 0)
        time.sleep(1.5)
        zombies = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == sup:
                zombies += 1
        raise SystemExit(min(zombies, 100))
    """)
    assert supervise(sys.executable, "-c", agent).finish(60) == 0


def test_stragglers_are_killed_after_the_grace_period(supervise, tmp_path):
    pidfile = tmp_path / "straggler.pid"
    # A background child that ignores SIGTERM outlives the agent; SIGKILL ends it after the grace.
    cmd = f"(trap '' TERM; sleep 300) & echo $! > {pidfile}; exit 5"
    run = supervise("bash", "-c", cmd, grace=0.5)
    start = time.monotonic()
    assert run.finish() == 5
    assert time.monotonic() - start < 15
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_control_socket_is_owner_only_and_answers(supervise, tmp_path):
    run = supervise("sleep", "60")
    run.wait_for(run.socket)
    control_server.wait_ready(run.socket, 60)
    mode = stat.S_IMODE(os.stat(run.socket).st_mode)
    assert mode == 0o600
    info = control_server.status(run.socket)
    assert info["role"] == "python-dev" and info["mode"] == "standard" and info["engine"] is True
    assert info["subsystems"]["shims"]["on"] is True
    raw = b"".join(b"line %d of a long build log\n" % i for i in range(3000))
    reply = control_server.request(run.socket, b"OBS1 0 1000 %d %d 0 0\n" % (len("seq 3000"), len(raw)) + b"seq 3000" + raw, 10)
    head, _, body = reply.partition(b"\n")
    assert head.startswith(b"OK ")
    n_out, n_err = map(int, head.split()[1:])
    assert len(body) == n_out + n_err and n_out < len(raw)
    assert b"capsule ctx expand '<<ccr:" in body
    assert control_server.request(run.socket, b"BOGUS\n") == b"RAW\n"
    run.proc.send_signal(signal.SIGTERM)
    assert run.finish() == 128 + signal.SIGTERM
    assert not run.socket.exists()


def test_disable_switch_serves_no_socket(supervise, tmp_path):
    flag = tmp_path / "ran"
    run = supervise("sh", "-c", f"touch {flag}; sleep 0.5", env={"JACKIN_CTX_DISABLE": "1"})
    assert run.finish() == 0
    assert flag.exists() and not run.socket.exists()


def test_agent_environment_has_marker_socket_and_shims_first(supervise, tmp_path):
    out = tmp_path / "env.json"
    shim_dir = tmp_path / "shims"
    shim_dir.mkdir()
    script = f"import json, os; json.dump(dict(os.environ), open({str(out)!r}, 'w'))"
    run = supervise(sys.executable, "-c", script)
    assert run.finish() == 0
    env = json.loads(out.read_text())
    assert env["JACKIN_CTX_AGENT"] == "shell"
    assert env["JACKIN_CTX_SOCKET"] == str(run.socket)
    assert env["JACKIN_CTX_MODE"] == "standard"


def test_interactive_agent_owns_the_terminal(tmp_path):
    # At a terminal the agent's process group is made the foreground group, so it can read it.
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:
        os.environ["JACKIN_CTX_STATE_DIR"] = str(tmp_path / "state")
        os.execv(sys.executable, [sys.executable, "-m", "capsule", "up", "--role", "default", "--local", "--",
                                  "bash", "-c", "read x; echo got-$x; exit 4"])
    buf = b""
    sent = False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not sent and time.monotonic() > deadline - 28:
            os.write(fd, b"hello\n")
            sent = True
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    end = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < end:
        time.sleep(0.1)
    if done[0] == 0:  # a hang fails the test instead of stalling the suite
        os.kill(pid, signal.SIGKILL)
        done = os.waitpid(pid, 0)
    assert b"got-hello" in buf
    assert os.waitstatus_to_exitcode(done[1]) == 4


def test_a_second_supervisor_on_the_same_state_dir_leaves_the_first_alone(supervise, tmp_path):
    first = supervise("sleep", "60")
    first.wait_for(first.socket)
    control_server.wait_ready(first.socket, 60)
    out = tmp_path / "second.env"
    second = supervise(sys.executable, "-c",
                       f"import os; open({str(out)!r}, 'w').write(os.environ['JACKIN_CTX_SOCKET'])")
    assert second.finish() == 0
    own = out.read_text()
    assert own != str(first.socket) and own.startswith(str(first.state / "engine-"))
    assert control_server.ping(first.socket), "the first supervisor still answers on its socket"
    first.proc.send_signal(signal.SIGTERM)
    assert first.finish() == 128 + signal.SIGTERM


def test_the_workspace_index_is_warm_when_the_agent_searches(tmp_path):
    """The supervisor builds the search index while the agent starts; the agent's first search
    (here: `capsule index search` run as the agent) finds it without building it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(40):
        (ws / f"mod_{i}.py").write_text(f"def parse_invoice_{i}(row):\n    return row['total_{i}']\n")
    state = tmp_path / "state"
    agent = ("import subprocess, sys, time\n"
             "from capsule.retrieve.index import WorkspaceIndex\n"
             f"idx = WorkspaceIndex({str(ws)!r})\n"
             "for _ in range(200):\n"
             "    if idx.num_docs() >= 40: break\n"
             "    time.sleep(0.05); idx.index.reload()\n"
             "print('docs', idx.num_docs())\n")
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state)}
    import subprocess

    r = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", "default", "--local", "--workspace", str(ws),
                        "--", sys.executable, "-c", agent], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "docs 40" in r.stdout
    assert "workspace index warm: 40 files" in (state / "capsule.log").read_text()
