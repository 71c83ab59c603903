"""How agents really run things (issue 9.2): file reads through the shell and interpreters/runners
reach the engine with their exact command line; calls whose output must stream pass raw.

Real tools (cat, head, sed, nl, tail, python3) behind the installed shims, the real engine behind
the socket; the agent's tool call is a shell that sourced capsule-env.sh (tests/shims/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import apsw
import pytest

from capsule import shims

AGENT = {"JACKIN_CTX_AGENT": "claude", "CLAUDECODE": "1"}
READS = ["cat", "head", "tail", "sed", "nl", "python3"]


@pytest.fixture(scope="module")
def reads(shimenv, tmp_path_factory):
    """A shim dir for the read and interpreter tools, on the shared engine."""
    d = tmp_path_factory.mktemp("readshims")
    shims.install(d, names=READS, socket=str(shimenv.socket))
    return d


def _env(shimenv, reads, **extra):
    return {"PATH": f"{reads}:/usr/bin:/bin", **extra}


def _call(shimenv, reads, script, cwd, **kw):
    env_file = reads / shims.ENV_FILE
    return shimenv.shell(f". {env_file}\n{script}", cwd=cwd, **_env(shimenv, reads, **AGENT), **kw)


def _last_commands(shimenv, n):
    ledger = apsw.Connection(str(shimenv.socket.parent / "ledger.db"))
    return [r[0] for r in ledger.execute("select command from emissions order by id desc limit ?", (n,))][::-1]


def test_tools_list_has_the_reads_and_runners():
    table = shims.tool_table()
    for name in ("cat", "head", "tail", "sed", "nl", "python", "python3", "npx", "make", "uv", "poetry"):
        assert name in table
    assert "-f" in table["tail"] and "bare" in table["python3"]


def test_file_reads_reach_the_engine_with_the_exact_command_line(shimenv, reads, tmp_path):
    rows = [{"id": f"ord-{i:05d}", "status": "failed" if i == 251 else "shipped"} for i in range(1, 401)]
    (tmp_path / "orders.json").write_text(json.dumps(rows, indent=2) + "\n")
    before = shimenv.served()
    commands = ["cat orders.json", "head -n 40 orders.json", "sed -n '10,20p' orders.json", "nl orders.json",
                "tail -n 30 orders.json"]
    for c in commands:
        got = _call(shimenv, reads, c, tmp_path)
        assert got.returncode == 0, got.stderr
    assert shimenv.served() == before + len(commands)
    assert _last_commands(shimenv, len(commands)) == ["cat orders.json", "head -n 40 orders.json",
                                                      "sed -n 10,20p orders.json", "nl orders.json",
                                                      "tail -n 30 orders.json"]
    # a bounded read passes whole (the engine's read rules)
    view = _call(shimenv, reads, "sed -n '10,20p' orders.json", tmp_path).stdout
    assert view == subprocess.run(["sed", "-n", "10,20p", "orders.json"], cwd=tmp_path, capture_output=True).stdout


def test_python_runs_through_the_shim_once_and_its_children_stay_raw(shimenv, reads, tmp_path):
    (tmp_path / "test_x.py").write_text("def test_ok():\n    assert 1\n\ndef test_bad():\n    assert 2 == 3\n")
    (tmp_path / "child.py").write_text(
        "import subprocess, sys\n"
        "out = subprocess.run(['python3', '-c', 'print(\"x\" * 10)'], capture_output=True).stdout\n"
        "sys.stdout.write(out.decode() * 3)\n")
    before = shimenv.served()
    got = _call(shimenv, reads, f"python3 -m pytest -q -p no:cacheprovider test_x.py", tmp_path,
                PYTHONPATH=os.pathsep.join(sys.path))
    assert got.returncode == 1 and b"assert 2 == 3" in got.stdout + got.stderr
    got = _call(shimenv, reads, "python3 child.py", tmp_path)
    assert got.returncode == 0 and got.stdout == b"xxxxxxxxxx\n" * 3
    assert shimenv.served() == before + 2  # the nested python3 ran raw inside the shimmed one
    assert _last_commands(shimenv, 2) == ["python3 -m pytest -q -p no:cacheprovider test_x.py", "python3 child.py"]


def test_bare_python_and_tail_follow_pass_raw_and_stream(shimenv, reads, tmp_path):
    before = shimenv.served()
    got = subprocess.run(["bash", "-c", f". {reads / shims.ENV_FILE}\npython3"], input=b"print(6*7)\n",
                         env=shimenv.env(**_env(shimenv, reads, **AGENT)), capture_output=True, timeout=30)
    assert got.stdout == b"42\n"
    log = tmp_path / "app.log"
    log.write_text("".join(f"line {i}\n" for i in range(200)))
    proc = subprocess.Popen(["bash", "-c", f". {reads / shims.ENV_FILE}\nexec tail -n 3 -f {log}"],
                            env=shimenv.env(**_env(shimenv, reads, **AGENT)), stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        import select

        # arrives while tail still runs: streamed, not held by the shim until it exits
        assert select.select([proc.stdout], [], [], 20)[0], "tail -f output was held back"
        assert proc.stdout.readline() == b"line 197\n"
    finally:
        proc.kill()
        proc.wait(10)
    assert shimenv.served() == before


def test_a_terminal_on_stdin_means_interactive_raw(shimenv, tmp_path):
    import pty

    master, slave = pty.openpty()
    try:
        before = shimenv.served()
        got = shimenv.shell("talk 3000", stdin=slave, **AGENT)
        assert got.stdout.count(b"\n") == 3000 and shimenv.served() == before
    finally:
        os.close(master)
        os.close(slave)
