"""`capsule ctx run` and `ctx pipe`: real commands, real exit codes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from capsule.ground import tokens
from capsule.measure.ledger import Ledger


def test_every_exit_code_is_bit_exact(capsule):
    """With the run's own engine (no daemon): both ends, the shell's 126/127 and the signal range (the
    compiled capture runs all 256 in tests/shims/test_conformance.py)."""
    for code in (0, 1, 2, 63, 126, 127, 128, 200, 255):
        assert capsule("ctx", "run", "--", "sh", "-c", f"exit {code}", env={"JACKIN_CTX_NO_DAEMON": "1"}).returncode == code


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV, signal.SIGINT, signal.SIGABRT,
                                 signal.SIGHUP, signal.SIGUSR1])
def test_signal_death_is_128_plus_n(capsule, sig):
    """The run dies of the command's signal, as the command would have (a shell's $? is 128+n)."""
    r = capsule("ctx", "run", "--", "sh", "-c", f'kill -{int(sig)} $$; echo "rc=$?"', env={"JACKIN_CTX_NO_DAEMON": "1"})
    assert r.returncode == -int(sig) and r.stdout == b""
    shell = subprocess.run(["sh", "-c", f'{sys.executable} -m capsule ctx run -- sh -c "kill -{int(sig)} \\$\\$"; echo "rc=$?"'],
                           capture_output=True, env={**os.environ, "JACKIN_CTX_NO_DAEMON": "1",
                                                     "JACKIN_CTX_STATE_DIR": os.environ["JACKIN_CTX_STATE_DIR"]})
    assert shell.stdout == f"rc={128 + int(sig)}\n".encode()


def test_sigterm_to_capsule_reaches_the_command(state_dir, tmp_path):
    marker = tmp_path / "got-term"
    script = f"trap 'echo term > {marker}; exit 42' TERM; echo ready; while :; do sleep 0.05; done"
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "run", "--", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)})
    import time

    deadline = time.time() + 20
    while time.time() < deadline and proc.poll() is None:
        # ready once the child shell exists under capsule
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        if children:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 42
    assert marker.read_text().strip() == "term"
    assert out == b"ready\n"


def test_stdout_and_stderr_stay_separate(capsule):
    script = "for i in $(seq 1 300); do echo out $i; echo err $i 1>&2; done"
    r = capsule("ctx", "run", "--", "sh", "-c", script)
    assert r.returncode == 0
    assert b"err" not in r.stdout.replace(b"<<ccr", b"")
    assert b"out 1\n" in r.stdout and b"err 1\n" in r.stderr
    assert r.stdout.count(b"[full output: capsule ctx expand") == 1
    assert r.stderr.count(b"[full output: capsule ctx expand") == 1


def test_stdin_passes_through(capsule):
    r = capsule("ctx", "run", "--", "cat", input=b"hello from stdin\n")
    assert r.stdout == b"hello from stdin\n"


def test_missing_command_is_127(capsule):
    r = capsule("ctx", "run", "--", "no-such-command-capsule")
    assert r.returncode == 127 and b"command not found" in r.stderr


def test_no_command_is_usage_error(capsule):
    r = capsule("ctx", "run")
    assert r.returncode == 2 and b"no command given" in r.stderr


def test_disable_is_pure_passthrough(capsule, state_dir):
    r = capsule("ctx", "run", "--", "seq", "1", "5000", env={"JACKIN_CTX_DISABLE": "1"})
    assert r.stdout == subprocess.run(["seq", "1", "5000"], capture_output=True).stdout
    assert not (state_dir / "ledger.db").exists() or Ledger(state_dir / "ledger.db").count() == 0


def test_measure_only_leaves_output_untouched_but_records_savings(capsule, state_dir):
    r = capsule("ctx", "run", "--", "seq", "1", "5000", env={"JACKIN_CTX_MEASURE_ONLY": "1"})
    assert r.stdout == subprocess.run(["seq", "1", "5000"], capture_output=True).stdout
    rows = Ledger(state_dir / "ledger.db").rows()
    assert len(rows) == 1 and rows[0]["applied"] == 0
    assert rows[0]["emitted_tokens"] == rows[0]["raw_tokens"]
    assert 0 < rows[0]["would_emit_tokens"] < rows[0]["raw_tokens"]
    gain = capsule("ctx", "gain").stdout.decode()
    assert "measure-only: 1 emissions left untouched" in gain


def test_run_writes_a_ledger_row_with_the_fields(capsule, state_dir):
    r = capsule("ctx", "run", "--", "sh", "-c", "seq 1 3000; exit 3")
    assert r.returncode == 3
    row = Ledger(state_dir / "ledger.db").get(1)
    assert row["command"] == "sh -c 'seq 1 3000; exit 3'"
    assert row["exit_code"] == 3 and row["stream"] == "stdout"
    assert row["raw_tokens"] > row["emitted_tokens"] > 0
    assert row["raw_bytes"] > row["emitted_bytes"]
    assert row["handle"] and row["duration_ms"] > 0 and row["token_label"] == "cl100k_base"
    assert row["manifest"] and all(m["reason"] for m in row["manifest"])


def test_pipe_sniffs_json_without_cmd_and_honours_cmd(capsule):
    data = subprocess.run(["git", "log", "-n", "40", "--stat"], capture_output=True).stdout
    r = capsule("ctx", "pipe", "--cmd", "git log --stat", input=data)
    assert r.returncode == 0 and len(r.stdout) <= len(data)
    r2 = capsule("ctx", "pipe", input=b"")
    assert r2.returncode == 0 and r2.stdout == b""


def test_an_overlong_intent_is_shortened_with_one_warning_never_an_error(capsule, state_dir):
    # Issue 25: 35 of 2,000 recorded agent steps had thoughts over 128 tokens, and `ctx pipe
    # --intent` exited 2 with no output. (It was an error before; the output must never be lost.)
    thought = ("THOUGHT: the failing test names refund_half in billing; " + "I should look at every module that "
               "imports the rounding helpers and check how they call it before editing. " * 30
               + "Next: read the test log for refund_half.")
    log = subprocess.run(["git", "log", "-n", "60", "--stat"], capture_output=True).stdout
    r = capsule("ctx", "pipe", "--cmd", "git log --stat", "--intent", thought, input=log)
    assert r.returncode == 0 and r.stdout
    assert r.stderr.decode().count("--intent is over 128 tokens") == 1
    row = Ledger(state_dir / "ledger.db").get(1)
    assert row["intent"].startswith("THOUGHT: the failing test names refund_half")
    assert row["intent"].endswith("read the test log for refund_half.")
    assert tokens.count(row["intent"]) <= 128
    run = capsule("ctx", "run", "--intent", thought, "--", "git", "log", "-n", "3", "--oneline")
    assert run.returncode == 0 and run.stdout.count(b"\n") == 3
    assert run.stderr.decode().count("--intent is over 128 tokens") == 1
    helptext = capsule("ctx", "pipe", "--help").stdout.decode()
    assert "shortened" in helptext and "first and last words" in " ".join(helptext.split())


def test_pytest_failures_survive_run(capsule, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    tests = "\n".join(f"def test_ok_{i}():\n    assert True\n" for i in range(150))
    tests += "\ndef test_money():\n    assert 0.1 + 0.2 == 0.3, 'float sum'\n"
    (proj / "test_many.py").write_text(tests)
    r = capsule("ctx", "run", "--", sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", str(proj))
    assert r.returncode == 1
    out = r.stdout.decode()
    assert "FAILED" in out and "test_money" in out and "float sum" in out
    assert "1 failed, 150 passed" in out


def test_intent_reaches_the_reflex_and_the_ledger(capsule, state_dir):
    lines = [f"checked record {i} of the nightly batch and nothing to report" for i in range(400)]
    lines[201] = "record 201: invoice INV-2024-0517 rendered without vat_id"
    data = ("\n".join(lines) + "\n").encode()
    r = capsule("ctx", "pipe", "--cmd", "some-unknown-tool", "--intent", "which invoice lacks a vat_id", input=data)
    assert r.returncode == 0
    assert b"INV-2024-0517" in r.stdout
    row = Ledger(state_dir / "ledger.db").get(1)
    assert row["intent"] == "which invoice lacks a vat_id"
    assert row["transform"] == "reflex"
