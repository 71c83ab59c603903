"""A running `ctx run`'s journal (issue 31): it held the command's raw stdout/stderr, secrets included,
until the run ended. Now nothing reaches the state dir while the run lives (its engine watches the
capture's memory files, JRN1), and a killed run's bytes reach it redacted. A slow command prints a
GitHub token and aws-cli's credentials JSON, then sleeps: while it sleeps, no file under the state dir
holds either secret; the agent's view, when the run ends, is the command's own bytes; a run killed
outright is archived from the redacted journal the engine wrote."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import apsw

from tests.hostile.killing import kill_with_its_groups
from tests.hostile.test_secret_redaction import _holding

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GHP = "ghp_Q7wE2rT9yU4iO6pA3sD8fG1hJ5kL0zX2cV4b"
SAK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzLIVEJOURNAL"
STS = json.dumps({"Credentials": {"AccessKeyId": "ASIAQWERTYUIOPASDFGH", "SecretAccessKey": SAK,
                                  "Expiration": "2026-12-02T18:00:00Z"}}, indent=4)
SECRETS = [GHP.encode(), SAK.encode(), GHP[:20].encode(), GHP[20:].encode()]
# The token printed whole, then wrapped over two lines by a second write after a pause. The secrets come
# from the environment (the command line is redacted by its own test: test_killed_run.py).
SCRIPT = ('echo "cloning with token $T"; printf "%s\\n" "$STS" >&2; sleep 0.5; '
          'printf "GITHUB_TOKEN=%s\\n" "$T_A"; sleep 0.5; printf "%s\\nstill working\\n" "$T_B"; touch "$FLAG"; sleep NAP; '
          'echo done')
SECRET_ENV = {"T": GHP, "T_A": GHP[:20], "T_B": GHP[20:], "STS": STS}


def _env(state, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    return {**env, "JACKIN_CTX_STATE_DIR": str(state), **extra}


def _journal_text(state) -> str:
    d = state / "journal"
    out = []
    for p in sorted(d.iterdir()) if d.is_dir() else ():
        if p.suffix in (".stdout", ".stderr"):
            try:
                out.append(p.read_text(errors="replace"))
            except FileNotFoundError:
                continue
    return "".join(out)


def _start(state, nap: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "run", "--", "sh", "-c", SCRIPT.replace("NAP", str(nap))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            env=_env(state, JACKIN_CTX_STREAM_AFTER="120", FLAG=str(state.parent / "printed"),
                                     **SECRET_ENV))


def _wait_for_the_sleep(state, proc, timeout=60.0) -> list[str]:
    """Poll until the command has printed every line before its sleep; every look greps every file
    under the state dir for the secrets. Returns what any look found."""
    found: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found += _holding(state, SECRETS) if state.is_dir() else []
        except (apsw.BusyError, apsw.IOError):   # the run's engine is creating its stores meanwhile (a
            # read-only look at a WAL store whose shared memory is not made yet is an IOError): look again
            time.sleep(0.05)
            continue
        if (state.parent / "printed").exists():
            return found
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the command never reached its sleep")


def test_while_the_command_sleeps_no_file_under_the_state_dir_holds_its_secrets(tmp_path):
    state = tmp_path / "state"
    proc = _start(state, nap=3)
    try:
        found = _wait_for_the_sleep(state, proc)
        assert found == [], found
        time.sleep(0.5)                                    # and a look well after the capture read it all
        assert _holding(state, SECRETS) == [] and _journal_text(state) == ""
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    # the agent's view is the command's own: the secrets are there (it printed them), nothing redacted
    assert GHP.encode() in out and f"GITHUB_TOKEN={GHP[:20]}\n{GHP[20:]}\n".encode() in out and out.endswith(b"done\n")
    assert SAK.encode() in err and b"capsule redacted" not in out + err
    assert not (state / "journal").exists() or not any((state / "journal").iterdir())
    assert _holding(state, SECRETS) == []                   # nor after the run (archive, ledger)


def test_a_killed_run_is_archived_from_the_redacted_journal(tmp_path):
    state = tmp_path / "state"
    proc = _start(state, nap=60)
    try:
        _wait_for_the_sleep(state, proc)
        time.sleep(0.5)
    finally:
        kill_with_its_groups(proc)      # the command leads its own process group (no terminal)
    deadline = time.monotonic() + 30
    while "still working" not in _journal_text(state) and time.monotonic() < deadline:
        time.sleep(0.05)                                   # the engine journals what the killed run held
    assert "cloning with token [capsule redacted: " in _journal_text(state) and _holding(state, SECRETS) == []
    nxt = subprocess.run([sys.executable, "-m", "capsule", "ctx", "run", "--", "echo", "next"], capture_output=True,
                         env=_env(state), cwd=REPO, timeout=120)
    handles = dict(re.findall(r"bytes of (\w+) it had printed are kept: capsule ctx expand '<<ccr:([0-9a-f]{24})>>'",
                              nxt.stderr.decode()))
    assert set(handles) == {"stdout", "stderr"}, nxt.stderr
    shown = subprocess.run([sys.executable, "-m", "capsule", "ctx", "expand", handles["stdout"]], capture_output=True,
                           env=_env(state), cwd=REPO, timeout=120)
    assert shown.stdout.startswith(b"cloning with token [capsule redacted: ") and b"still working\n" in shown.stdout
    assert b"redacted before it was stored" in shown.stderr
    assert _holding(state, SECRETS) == []
