"""The thin shim: exit codes bit-exact, passthrough rules, raw output whenever the engine is not there."""

from __future__ import annotations

import signal
import subprocess

import pytest

from capsule import shims
from tests.fakes import unix_socket

AGENT = {"JACKIN_CTX_AGENT": "claude", "CLAUDECODE": "1"}   # capsule launched Claude Code; its Bash tool


def raw(shimenv, *argv):
    return subprocess.run([str(shimenv.real_dir / argv[0]), *argv[1:]], capture_output=True)


@pytest.mark.parametrize("code", [0, 1, 2, 42, 126, 127, 255])
def test_exit_codes_are_bit_exact_through_the_engine(shimenv, code):
    before = shimenv.served()
    got = shimenv.run("talk", "3", "2", str(code), **AGENT)
    assert got.returncode == code
    assert got.stdout == raw(shimenv, "talk", "3", "2", str(code)).stdout  # small: untouched
    assert got.stderr == b"err line 1\nerr line 2\n"
    assert shimenv.served() == before + 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL, signal.SIGUSR1])
def test_death_by_signal_is_reproduced(shimenv, sig):
    direct = raw(shimenv, "die", str(int(sig)))
    got = shimenv.run("die", str(int(sig)), **AGENT)
    assert direct.returncode == -sig
    assert got.returncode == -sig, "the shim dies of the same signal, as the real command did"
    assert got.stdout == b"before\n"


def test_agent_call_long_output_is_compressed_with_a_handle(shimenv):
    got = shimenv.run("talk", "3000", "0", "0", **AGENT)
    full = raw(shimenv, "talk", "3000").stdout
    assert got.returncode == 0
    assert len(got.stdout) < len(full)
    assert b"capsule ctx expand '<<ccr:" in got.stdout


@pytest.mark.parametrize("extra, engine", [
    ({}, False),                                           # not an agent tool call: raw
    (AGENT, True),
    ({"CLAUDECODE": "1"}, False),                          # a vendor variable alone is a hint: no agent capsule launched
    ({"JACKIN_CTX_AGENT": "claude"}, False),               # the client's own call (git for its prompt): no tool mark
    ({"JACKIN_CTX_AGENT": "codex", "CODEX_THREAD_ID": "t-1"}, True),
    ({"JACKIN_CTX_AGENT": "codex", "CLAUDECODE": "1"}, False),   # another client's mark
    ({"JACKIN_CTX_AGENT": "opencode", "OPENCODE": "1", "AGENT": "1"}, False),  # OpenCode's own git calls carry these
    ({"JACKIN_CTX_AGENT": "opencode", "JACKIN_CTX_TOOL": "opencode:toolu_1"}, True),  # its bash tool (session plugin)
    ({"JACKIN_CTX_AGENT": "gemini", "GEMINI_CLI": "1"}, True),
    ({"JACKIN_CTX_AGENT": "shell"}, True),                 # the supervisor's marker for a shell agent
    ({"JACKIN_CTX_AGENT": "claude", "CLAUDECODE": "0"}, False),
    ({**AGENT, "JACKIN_CTX_DISABLE": "1"}, False),
    ({**AGENT, "JACKIN_CTX_NO_SHIMS": "1"}, False),
    ({**AGENT, "JACKIN_CTX_NO_SHIMS": "0"}, True),
    ({**AGENT, shims.NESTED: "1"}, False),                # inside another shimmed command
])
def test_passthrough_rules(shimenv, extra, engine):
    before = shimenv.served()
    got = shimenv.run("talk", "3000", **extra)
    assert got.returncode == 0
    assert shimenv.served() == before + (1 if engine else 0)
    if not engine:
        assert got.stdout == raw(shimenv, "talk", "3000").stdout


def test_pipeline_stage_and_redirect_stay_raw(shimenv, tmp_path):
    before = shimenv.served()
    got = shimenv.shell("talk 3000 | wc -l; talk 3000 > out.txt; echo $(talk 2000 | tail -1); "
                        "timeout 20 talk 3000 | wc -l; nice env talk 3000 | wc -l", cwd=tmp_path, **AGENT)
    lines = got.stdout.splitlines()
    assert lines == [b"3000", b"out line 2000 of a long listing", b"3000", b"3000"]
    assert (tmp_path / "out.txt").read_bytes() == raw(shimenv, "talk", "3000").stdout
    assert shimenv.served() == before


def test_engine_down_passes_raw(shimenv, tmp_path):
    want = raw(shimenv, "talk", "3000", "1", "3")
    for sock in (tmp_path / "missing.sock", "/dev/null"):
        got = shimenv.run("talk", "3000", "1", "3", JACKIN_CTX_SOCKET=str(sock), **AGENT)
        assert (got.returncode, got.stdout, got.stderr) == (3, want.stdout, want.stderr)


def _server(path, reply: bytes | None):
    conns = []      # kept open: with reply None the engine never answers

    def answer(conn):
        conns.append(conn)
        if reply is not None:
            while conn.recv(1 << 16):
                pass
            conn.sendall(reply)
            conn.close()

    return unix_socket.serve(path, answer, backlog=4)


@pytest.mark.parametrize("reply", [None, b"garbage", b"OK 9 0\nshort", b"RAW\n"])
def test_engine_slow_or_failing_passes_raw(shimenv, tmp_path, reply):
    path = tmp_path / "bad.sock"
    srv = _server(path, reply)
    try:
        want = raw(shimenv, "talk", "400", "1", "4")
        got = shimenv.run("talk", "400", "1", "4", JACKIN_CTX_SOCKET=str(path), **AGENT)
        assert (got.returncode, got.stdout, got.stderr) == (4, want.stdout, want.stderr)
    finally:
        srv.close()


def test_loop_guard_skips_shim_dirs_and_reports_missing(shimenv, tmp_path):
    alias = tmp_path / "alias"
    alias.symlink_to(shimenv.shim_dir)
    env = shimenv.env(**AGENT)
    env["PATH"] = f"{shimenv.shim_dir}:{alias}:{shimenv.shim_dir}:{shimenv.real_dir}"
    got = subprocess.run(["talk", "2"], env=env, capture_output=True, timeout=30)
    assert got.returncode == 0 and got.stdout.startswith(b"out line 1")
    env["PATH"] = f"{shimenv.shim_dir}:{alias}"
    got = subprocess.run(["talk"], env=env, capture_output=True, timeout=30)
    assert got.returncode == 127 and b"command not found" in got.stderr


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python-only"])
def test_install_is_idempotent_and_uses_the_tool_list(tmp_path, compiled):
    # With a C compiler the Python shim sits beside the compiled one (capsule-shim.py); without
    # one (or compiled=False) it is capsule-shim itself, as before.
    first = shims.install(tmp_path / "s", compiled=compiled)
    script = tmp_path / "s" / (shims.PY_PROGRAM if compiled else shims.PROGRAM)
    binary = (tmp_path / "s" / shims.PROGRAM).read_bytes()
    program = script.read_text()
    second = shims.install(tmp_path / "s", compiled=compiled)
    assert first == second and "git" in [p.name for p in first]
    assert script.read_text() == program and (tmp_path / "s" / shims.PROGRAM).read_bytes() == binary
    assert binary.startswith(b"\x7fELF") == compiled
    assert program.startswith("#!") and " -IS\n" in program.splitlines()[0] + "\n"
    assert shims.is_capsule_shim(tmp_path / "s" / "git")
    imports = [line for line in program.splitlines() if line.strip().startswith(("import ", "from "))]
    # ctypes: only in the forked child that copies a background job's output on (fallocate punch-hole);
    # fcntl: only in `ctx run`'s capture mode, to seal its journalled memory files; never on a shim's own path.
    assert sorted({line.split()[1] for line in imports}) == ["_signal", "_socket", "ctypes", "fcntl", "os", "sys", "time"]


def test_two_shim_directories_never_loop(shimenv, tmp_path):
    # e.g. `capsule up --local` inside the image: its shims sit ahead of the image's own.
    second = tmp_path / "second"
    shims.install(second, names=["talk"])
    for extra in ({}, AGENT):
        env = shimenv.env(**extra)
        env["PATH"] = f"{shimenv.shim_dir}:{second}:{shimenv.real_dir}:/usr/bin:/bin"
        got = subprocess.run(["talk", "2", "0", "5"], env=env, capture_output=True, timeout=20)
        assert got.returncode == 5 and got.stdout.startswith(b"out line 1")
        env["PATH"] = f"{second}:{shimenv.shim_dir}"
        got = subprocess.run(["talk"], env=env, capture_output=True, timeout=20)
        assert got.returncode == 127


def test_the_agents_session_is_the_ledger_scope(shimenv):
    import apsw

    shimenv.run("talk", "40", **AGENT, CLAUDE_CODE_SESSION_ID="sess-42")
    shimenv.run("talk", "41", JACKIN_CTX_AGENT="codex", CODEX_THREAD_ID="thread-7")
    shimenv.served()   # STATUS answers once the rows deferred past each reply are written
    ledger = apsw.Connection(str(shimenv.socket.parent / "ledger.db"))
    scopes = [r[0] for r in ledger.execute("select scope from emissions order by id desc limit 2")]
    assert scopes == ["thread-7", "sess-42"]


def test_output_over_the_handover_cap_streams_raw(shimenv, tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 1000 + b"\n" + b"".join(b"row %d\n" % i for i in range(5_000_000)))
    (shimenv.real_dir / "bigcat").write_text(f"#!/bin/sh\ncat {big}\nexit 9\n")
    (shimenv.real_dir / "bigcat").chmod(0o755)
    shims.install(shimenv.shim_dir, names=["bigcat"])
    before = shimenv.served()
    got = shimenv.run("bigcat", **AGENT)
    assert big.stat().st_size > shims.MAX_BYTES
    assert got.returncode == 9 and got.stdout == big.read_bytes()
    assert shimenv.served() == before


def test_final_output_through_wrappers_is_still_handed_over(shimenv, tmp_path):
    before = shimenv.served()
    got = shimenv.shell("timeout 20 talk 3000; echo 1 | xargs talk; true", cwd=tmp_path, **AGENT)
    assert got.stdout.count(b"capsule ctx expand '<<ccr:") == 1  # 3000 lines shrink; 1 line stays
    assert shimenv.served() == before + 2


def test_a_long_running_call_streams_raw_once_it_outlasts_the_wait(shimenv):
    """A dev server or a long build must not look dead: after JACKIN_CTX_STREAM_AFTER seconds the
    shim writes what it holds and streams the rest raw, and the exit status is still the command's."""
    import time

    env_file = shimenv.shim_dir / shims.ENV_FILE
    proc = subprocess.Popen(["bash", "-c", f". {env_file}\nexec slow 4", "agent-call"],
                            env=shimenv.env(**AGENT, JACKIN_CTX_STREAM_AFTER="0.5"),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        # the tool-call view here is the pipe we read: capsule-env.sh recorded it
        first = proc.stdout.readline()
        assert first == b"ready on port 8000\n" and proc.poll() is None   # seen while it still runs
        rest = proc.stdout.read()
        assert proc.wait(30) == 3
    finally:
        proc.kill()
    assert rest == b"".join(b"line %d\n" % i for i in range(1, 3001))   # raw: nothing held back or cut


def test_a_quick_call_is_still_compressed_with_the_stream_wait_set(shimenv):
    got = shimenv.run("slow", "0", **AGENT, JACKIN_CTX_STREAM_AFTER="20")
    assert got.returncode == 3
    assert b"capsule ctx expand '<<ccr:" in got.stdout and got.stdout.startswith(b"ready on port 8000\n")


def test_a_script_without_a_shebang_runs_under_sh_as_without_shims(shimenv):
    """execvp() and bash run a #!-less script with /bin/sh; so do the shims, captured or in place."""
    (shimenv.real_dir / "bare").write_text('echo "bare script $1"\nexit 4\n')
    (shimenv.real_dir / "bare").chmod(0o755)
    shims.install(shimenv.shim_dir, names=["bare"])
    plain = subprocess.run(["bash", "-c", "bare x"], env=dict(shimenv.env(), PATH=f"{shimenv.real_dir}:/usr/bin:/bin"),
                           capture_output=True)
    assert (plain.returncode, plain.stdout) == (4, b"bare script x\n")
    before = shimenv.served()
    got = shimenv.run("bare", "x", **AGENT)
    assert (got.returncode, got.stdout, got.stderr) == (4, b"bare script x\n", b"")
    assert shimenv.served() == before + 1
    got = shimenv.shell('bare y | cat; exit "${PIPESTATUS[0]}"', **AGENT)
    assert (got.returncode, got.stdout) == (4, b"bare script y\n") and shimenv.served() == before + 1


def test_the_shipped_alnum_ranges_are_this_pythons_isalnum():
    """capsule-capture quotes arguments by these runs; the file must be the running Python's
    str.isalnum() (regenerate it with shims.alnum_ranges() after a Unicode upgrade)."""
    import unicodedata

    head, *rows = shims.ALNUM_FILE.read_text().splitlines()
    assert head.endswith(unicodedata.unidata_version)
    runs = [tuple(int(x, 16) for x in row.split()) for row in rows]
    assert runs == shims.alnum_ranges()
    inside = {cp for lo, hi in runs for cp in range(lo, hi + 1)}
    for cp in (0xE9, 0xBD, 0x2014, 0x4E2D, 0x0663, 0xD800, 0x1F600, 0x10FFFF):
        assert (cp in inside) == chr(cp).isalnum(), hex(cp)
