"""`ctx run` killed with SIGKILL (issue 11): the run is the capture, and its engine (a warm one, or
the run's own child: cli/own_engine.py) watches it (JRN1): what the command printed is journalled,
redacted, once the capture is gone, and the next `ctx run` archives it and names its handles; a
command still running after JACKIN_CTX_STREAM_AFTER seconds streams raw (as the shims do), so a kill
after that costs the user nothing they had not already been shown. Nothing is persisted while the run
lives. The command outlives a killed capture (the Python capture's output is a memory file, which
never breaks): these tests end it by its process group."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINES = "".join(f"build step {i}: compiled module_{i}.o\n" for i in range(1, 3001)).encode()
PRINT = "for i in $(seq 1 3000); do echo \"build step $i: compiled module_$i.o\"; done"
# After its output, the command lives on; with its reader killed it dies of SIGPIPE at the next tick.
TICKS = "while :; do sleep 0.1; echo tick; done"


def _env(state_dir, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    return {**env, "JACKIN_CTX_STATE_DIR": str(state_dir), **extra}


def _start(state_dir, script: str, **extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "run", "--", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(state_dir, **extra), cwd=REPO)


def _journal(state_dir) -> dict[str, int]:
    """{stream: bytes} of the journal files there now (a file may go between listing and stat)."""
    d = state_dir / "journal"
    held = {}
    for p in (d.iterdir() if d.is_dir() else ()):
        try:
            held[p.name.rsplit(".", 1)[1]] = p.stat().st_size
        except FileNotFoundError:
            continue
    return held


def _wait(cond, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _gone(script_word: str) -> bool:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return script_word not in out


def _groups(pid: int) -> list[int]:
    """The process groups the run's command leads (no terminal: its own), to end after the run."""
    return [int(c) for t in os.listdir(f"/proc/{pid}/task") for c in open(f"/proc/{pid}/task/{t}/children").read().split()]


def _kill_run(proc: subprocess.Popen, groups: list[int]) -> tuple[bytes, bytes]:
    os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:      # the engine's child is no group's leader
            pass
    return out, err


def _capsule(state_dir, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capsule", *args], capture_output=True,
                          env=_env(state_dir), cwd=REPO, timeout=120)


def test_a_run_killed_with_sigkill_loses_nothing_it_had_captured(tmp_path):
    state = tmp_path / "state"
    marker = "killed-run-marker-1"
    flag = tmp_path / "printed"
    proc = _start(state, f"{PRINT}; echo 'error: linker failed' >&2; touch {flag}; : {marker}; {TICKS}",
                  JACKIN_CTX_STREAM_AFTER="120")
    _wait(flag.exists, what="the command to print its output")
    time.sleep(0.5)                        # the capture has read what the command printed
    assert _journal(state) == {}           # nothing persisted while the run lives
    out, err = _kill_run(proc, _groups(proc.pid))
    assert proc.returncode == -signal.SIGKILL
    assert out == b"" and err == b""       # the user was shown nothing: the output was held
    _wait(lambda: _gone(marker), what="the command to end")
    _wait(lambda: _journal(state).get("stdout", 0) >= len(LINES) and _journal(state).get("stderr", 0) > 0,
          what="the engine to journal the command's output")

    doctor = _capsule(state, "ctx", "doctor", "--json")
    waiting = json.loads(doctor.stdout)["state"]["interrupted"]
    assert [(w["command"].endswith(f"{TICKS}'"), w["bytes"]["stdout"] >= len(LINES)) for w in waiting] == [(True, True)]
    assert "was killed before its output was shown" in _capsule(state, "ctx", "doctor").stdout.decode()

    nxt = _capsule(state, "ctx", "run", "--", "echo", "next")
    assert nxt.returncode == 0 and nxt.stdout == b"next\n"          # this run's own output untouched
    notes = nxt.stderr.decode().strip().splitlines()
    assert len(notes) == 2 and all("was killed before its output was shown" in n for n in notes), notes
    handles = dict(re.search(r"bytes of (\w+) it had printed are kept: capsule ctx expand '<<ccr:([0-9a-f]{24})>>'",
                             n).groups() for n in notes)
    stdout = _capsule(state, "ctx", "expand", handles["stdout"])
    assert stdout.returncode == 0 and stdout.stdout.startswith(LINES)      # byte-exact, ticks after
    assert set(stdout.stdout[len(LINES):].split(b"\n")) <= {b"tick", b""}
    assert _capsule(state, "ctx", "expand", handles["stderr"]).stdout == b"error: linker failed\n"
    assert _journal(state) == {}
    assert json.loads(_capsule(state, "ctx", "doctor", "--json").stdout)["state"]["interrupted"] == []
    again = _capsule(state, "ctx", "run", "--", "echo", "next")
    assert again.stderr == b""             # reported once


def test_a_long_run_streams_raw_after_the_wait_so_a_kill_then_costs_nothing(tmp_path):
    state = tmp_path / "state"
    marker = "killed-run-marker-2"
    proc = _start(state, f"{PRINT}; : {marker}; {TICKS}", JACKIN_CTX_STREAM_AFTER="0.5")
    got = b""
    deadline = time.monotonic() + 60
    while len(got) < len(LINES) and time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 1.0)[0]:
            got += os.read(proc.stdout.fileno(), 1 << 16)
    assert got.startswith(LINES)           # shown raw while the command still runs
    _kill_run(proc, _groups(proc.pid))
    _wait(lambda: _gone(marker), what="the command to end")
    time.sleep(1.0)                        # the engine saw the capture end: what it streamed is not kept
    assert _journal(state) == {}
    assert _capsule(state, "ctx", "run", "--", "true").stderr == b""


def test_a_long_run_that_ends_keeps_every_byte_and_its_exit_status(tmp_path):
    state = tmp_path / "state"
    proc = _start(state, f"{PRINT}; sleep 1; echo late; echo 'warning: slow' >&2; exit 7",
                  JACKIN_CTX_STREAM_AFTER="0.3")
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (7, LINES + b"late\n", b"warning: slow\n")
    assert _journal(state) == {}


def test_a_run_that_ends_in_time_leaves_no_journal_and_is_still_compressed(tmp_path):
    state = tmp_path / "state"
    proc = _start(state, PRINT, JACKIN_CTX_STREAM_AFTER="60")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == b""
    assert len(out) < len(LINES) and b"capsule ctx expand" in out     # held, then observed as before
    assert _journal(state) == {}
    from capsule.store.archive import Archive

    handle = re.search(rb"<<ccr:([0-9a-f]{24})>>", out).group(1).decode()
    assert handle in Archive(state / "archive.db").search("2999")   # indexed by the finisher; the search waits


def test_a_state_dir_that_fills_up_mid_run_costs_the_journal_not_the_output(tmp_path):
    """The journal is the run's spool; when the state dir fills up part way, what it holds moves to
    a temporary spool and the output is still whole (raw: nothing can be archived either)."""
    state = tmp_path / "state"
    state.mkdir()
    lines = LINES * 4                                   # ~470 KB: more than the state dir can take
    script = f"for n in 1 2 3 4; do {PRINT}; done"
    mount = 'mount -t tmpfs -o size=256k tmpfs "$1" && shift && exec "$@"'
    # a private mount namespace in a user namespace (-r): no root needed to mount the small tmpfs
    proc = subprocess.run(["unshare", "-r", "-m", "sh", "-c", mount, "sh", str(state), sys.executable, "-m", "capsule",
                           "ctx", "run", "--", "sh", "-c", script], capture_output=True, env=_env(state), cwd=REPO,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[:1500]
    assert proc.stdout == lines
    assert b"Traceback" not in proc.stderr


def test_the_ledger_row_is_written_after_exit_and_readers_wait_for_it(tmp_path):
    """Counting a large raw output's tokens and writing its row happen in a detached finisher after
    `ctx run` has exited; a ledger reader waits for it and sees the figures an inline count gives."""
    import apsw

    from capsule.ground import tokens
    from capsule.measure.ledger import Ledger

    state = tmp_path / "state"
    proc = subprocess.run([sys.executable, "-m", "capsule", "ctx", "run", "--", "seq", "1", "1000000"],
                          capture_output=True, env=_env(state), cwd=REPO, timeout=300)
    db = state / "ledger.db"
    written = apsw.Connection(str(db)).execute("SELECT count(*) FROM emissions").fetchone()[0] if db.exists() else 0
    waiting = list((state / "pending").iterdir())
    assert proc.returncode == 0 and b"capsule ctx expand" in proc.stdout
    assert written == 0 and len(waiting) == 1          # exited; its finisher still counts ~7 MB
    rows = Ledger(db).rows()
    raw = "".join(f"{i}\n" for i in range(1, 1000001))
    assert [(r["command"], r["raw_tokens"], r["raw_bytes"]) for r in rows] == [("seq 1 1000000", tokens.count(raw), len(raw))]
    assert list((state / "pending").iterdir()) == []


def test_a_killed_runs_command_line_is_shown_and_archived_without_its_secret(tmp_path):
    # The journal the engine writes for a killed run holds the command redacted (its output too:
    # test_live_journal.py); what reads it (doctor, the next run's note, the archive) redacts again.
    state = tmp_path / "state"
    token = "ghp_R8xW2pLq9ZtY4vN6mK3sJ7dF1gH5aC0eB2uX"
    marker = "killed-run-marker-3"
    flag = tmp_path / "printed"
    proc = _start(state, f": {token}; {PRINT}; touch {flag}; : {marker}; {TICKS}", JACKIN_CTX_STREAM_AFTER="120")
    _wait(flag.exists, what="the command to print its output")
    time.sleep(0.5)
    _kill_run(proc, _groups(proc.pid))
    _wait(lambda: _gone(marker), what="the command to end")
    _wait(lambda: _journal(state).get("stdout", 0) >= len(LINES), what="the engine to journal the output")
    (waiting,) = json.loads(_capsule(state, "ctx", "doctor", "--json").stdout)["state"]["interrupted"]
    assert token not in waiting["command"] and "[capsule redacted: " in waiting["command"]
    nxt = _capsule(state, "ctx", "run", "--", "echo", "next")
    assert "was killed before its output was shown" in nxt.stderr.decode()
    assert token not in nxt.stderr.decode() and "[capsule redacted: " in nxt.stderr.decode()
    from capsule.store.archive import Archive

    archive = Archive(state / "archive.db", readonly=True)
    try:
        commands = [r[0] for r in archive.conn.execute("SELECT command FROM ccr_entries")]
    finally:
        archive.close()
    assert commands and all(token not in c and "[capsule redacted: " in c for c in commands)
    assert _journal(state) == {}
