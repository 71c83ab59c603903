"""The compiled shims (issue 23.4): capsule-shim decides and execs in place, freestanding; the agent's
own view is captured by capsule-capture, not by an interpreter; the Python shim stays the fallback.
The rules, exit codes, signals, stream wait and cap run through these in every `compiled` case of the
other shim tests; here: which program did the work, the build fallbacks, the command line's text."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from capsule import shims
from tests.fakes import unix_socket

AGENT = {"JACKIN_CTX_AGENT": "claude", "CLAUDECODE": "1"}
# a real tool reporting the program that ran it: the shim's exec chain, seen from below
PARENT = "#!/bin/sh\nreadlink /proc/$PPID/exe\n"
ARGS = "#!/bin/sh\necho \"$# arguments\"\necho 'and a line on stderr' >&2\n"

pytestmark = pytest.mark.parametrize("shimenv", ["compiled"], indirect=True)


@pytest.fixture(scope="module")
def tools(shimenv):
    for name, body in (("parent", PARENT), ("args", ARGS)):
        (shimenv.real_dir / name).write_text(body)
        (shimenv.real_dir / name).chmod(0o755)
    shims.install(shimenv.shim_dir, names=["parent", "args"])
    return shimenv


def _call(env, shim_dir, script, **extra):
    """An agent's tool call whose shell sourced shim_dir's capsule-env.sh (shim_dir first on PATH)."""
    e = env.env(**extra)
    e["PATH"] = f"{shim_dir}:{env.real_dir}:/usr/bin:/bin"
    return subprocess.run(["bash", "-c", f". {shim_dir / shims.ENV_FILE}\n{script}", "agent-call"], env=e,
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL)


def _elf_interp(path) -> bool:
    return b"/ld-linux" in path.read_bytes()[:4096]     # PT_INTERP sits in the first page


def test_the_agents_call_is_captured_in_c_and_a_programs_call_execs_in_place(tools):
    before = tools.served()
    got = tools.run("parent", **AGENT)
    assert got.returncode == 0 and got.stdout.decode().strip() == str(tools.shim_dir / shims.CAPTURE)
    assert tools.served() == before + 1
    # a pipe is a program's view: the shim became the real command, so its parent is the agent's bash
    got = tools.shell("parent | cat", **AGENT)
    assert os.path.basename(got.stdout.decode().strip()) == "bash"
    assert tools.served() == before + 1


def test_the_shim_is_freestanding_and_the_capture_is_built_beside_it(tools):
    shim = tools.shim_dir / shims.PROGRAM
    capture = tools.shim_dir / shims.CAPTURE
    assert not _elf_interp(shim) and shim.stat().st_size < 64 << 10, "no libc: nothing to load per exec"
    assert capture.read_bytes().startswith(b"\x7fELF") and os.access(capture, os.X_OK)


def test_without_the_capture_program_the_python_shim_captures(tools, tmp_path):
    d = tmp_path / "nocapture"
    shims.install(d, names=["parent", "talk"], socket=str(tools.socket))
    (d / shims.CAPTURE).unlink()
    before = tools.served()
    got = _call(tools, d, "parent", **AGENT)
    assert got.returncode == 0 and "python" in os.path.basename(got.stdout.decode().strip())
    got = _call(tools, d, "talk 3000 0 7", **AGENT)
    assert got.returncode == 7 and b"capsule ctx expand '<<ccr:" in got.stdout
    assert tools.served() == before + 2


def test_the_libc_build_serves_where_the_freestanding_one_does_not_build(tools, tmp_path, monkeypatch):
    cc = tmp_path / "cc-no-freestanding"
    cc.write_text(f'#!/bin/sh\nfor a; do [ "$a" = -nostdlib ] && exit 1; done\nexec {shims.compiler()} "$@"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    d = tmp_path / "libc"
    shims.install(d, names=["talk", "die"], socket=str(tools.socket))
    binary = (d / shims.PROGRAM).read_bytes()
    assert binary.startswith(b"\x7fELF") and len(binary) > 64 << 10     # glibc inside, static or not
    before = tools.served()
    got = _call(tools, d, "talk 3000 2 42", **AGENT)
    assert got.returncode == 42 and b"capsule ctx expand '<<ccr:" in got.stdout
    assert got.stderr == b"err line 1\nerr line 2\n"
    got = _call(tools, d, "talk 3000 | wc -l; die 15", **AGENT)
    assert got.stdout == b"3000\nbefore\n" and got.returncode == -signal.SIGTERM   # bash exec'd the last command: the shim died of it
    assert tools.served() == before + 2


def _recorder(path):
    """A socket that keeps each request it is sent and answers RAW (the shim then shows its own bytes)."""
    got: list[bytes] = []

    def keep(conn):
        with conn:
            got.append(unix_socket.request(conn))
            conn.sendall(b"RAW\n")

    return unix_socket.serve(path, keep, backlog=4), got


def test_the_request_is_the_python_shims_byte_for_byte(tools, tmp_path):
    """OBS1 as capsule_shim.py sends it: the command line's quoting (Python's str.isalnum, invalid
    UTF-8 quoted), both streams, the scope, the cwd and the forwarded client environment."""
    sock = tmp_path / "rec.sock"
    srv, requests = _recorder(sock)
    script = ("args plain 'two words' \"it's\" '' café 'em—dash' ½ $'bad\\xffbyte' --opt=x,y:z@1% "
              "'$HOME' 'a*b'")
    try:
        for kind in ("compiled", "python"):
            d = tmp_path / kind
            shims.install(d, names=["args"], socket=str(sock), compiled=kind == "compiled")
            got = _call(tools, d, script, **AGENT, JACKIN_CTX_SOCKET=str(sock),
                        CLAUDE_CODE_SESSION_ID="sess-9", BASH_MAX_OUTPUT_LENGTH="12000")
            assert got.returncode == 0 and got.stdout == b"11 arguments\n", got
    finally:
        srv.close()
    assert len(requests) == 2
    heads = [r.split(b"\n", 1) for r in requests]
    fields = [h[0].split() for h in heads]
    assert fields[0][:2] == fields[1][:2] == [b"OBS1", b"0"] and fields[0][3:] == fields[1][3:]   # [2]: duration
    assert heads[0][1] == heads[1][1]
    cmd = heads[0][1][:int(fields[0][3])]
    assert cmd.startswith(b"args plain 'two words' 'it'\"'\"'s' '' caf\xc3\xa9 ")
    assert b"'bad\xffbyte'" in cmd and b"sess-9" in heads[0][1] and b"BASH_MAX_OUTPUT_LENGTH=12000" in heads[0][1]


def test_a_signal_to_the_capture_reaches_the_command_and_its_death_is_reproduced(tools):
    env_file = tools.shim_dir / shims.ENV_FILE
    proc = subprocess.Popen(["bash", "-c", f". {env_file}\nexec slow 30", "agent-call"],
                            env=tools.env(**AGENT, JACKIN_CTX_STREAM_AFTER="0.3"), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout.readline() == b"ready on port 8000\n"     # streamed after the wait
        assert os.readlink(f"/proc/{proc.pid}/exe") == str(tools.shim_dir / shims.CAPTURE)
        children = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
        assert len(children) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == -signal.SIGTERM
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/{children[0]}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{children[0]}"), "the command got the forwarded SIGTERM"
    finally:
        proc.kill()
        proc.wait(10)
