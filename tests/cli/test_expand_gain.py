"""`capsule ctx expand` (byte-exact recovery) and `capsule ctx gain` (the ledger's summary)."""

from __future__ import annotations

import json
import subprocess
import re
import time
from capsule.ground.types import Observation

FOOTER = re.compile(rb"<<ccr:([0-9a-f]{24})>>")


def _handle(output: bytes) -> str:
    m = FOOTER.search(output)
    assert m, output[-300:]
    return m.group(1).decode()


def test_expand_is_byte_exact_for_binary_and_invalid_utf8(capsule):
    raw = b"".join(b"\x00\xff\xfe caf\xe9 row %d \x1b[31mred\x1b[0m\r\n" % i for i in range(500))
    r = capsule("ctx", "pipe", "--cmd", "cat data.bin", input=raw)
    h = _handle(r.stdout)
    e = capsule("ctx", "expand", h)
    assert e.returncode == 0 and e.stdout == raw
    assert capsule("ctx", "expand", f"<<ccr:{h}>>").stdout == raw


def test_expand_lines_and_grep(capsule):
    raw = "".join(f"entry {i}\n" for i in range(1, 1001)).encode()
    h = _handle(capsule("ctx", "pipe", input=raw).stdout)
    assert capsule("ctx", "expand", h, "--lines", "10-12").stdout == b"entry 10\nentry 11\nentry 12\n"
    assert capsule("ctx", "expand", h, "--grep", "^entry 99[0-2]$").stdout == b"990:entry 990\n991:entry 991\n992:entry 992\n"
    bad = capsule("ctx", "expand", h, "--lines", "9-3")
    assert bad.returncode == 2 and b"--lines" in bad.stderr


def test_expand_past_the_end_or_with_no_match_is_never_silent(capsule):
    raw = "".join(f"entry {i}\n" for i in range(1, 1001)).encode()
    h = _handle(capsule("ctx", "pipe", input=raw).stdout)
    past = capsule("ctx", "expand", h, "--lines", "9999-10000")
    assert past.returncode == 2 and past.stdout == b"" and b"only 1000 lines" in past.stderr
    assert capsule("ctx", "expand", h, "--lines", "1000-1200").stdout == b"entry 1000\n"   # overlap: no error
    none = capsule("ctx", "expand", h, "--grep", "^nothing here$")
    assert none.returncode == 1 and b"no line matches" in none.stderr


def test_unknown_and_expired_handles_exit_2(capsule):
    r = capsule("ctx", "expand", "0" * 24)
    assert r.returncode == 2 and b"no archived output" in r.stderr
    r = capsule("ctx", "expand", "not-a-handle")
    assert r.returncode == 2 and b"not a capsule handle" in r.stderr
    raw = "".join(f"entry {i}\n" for i in range(1000)).encode()
    h = _handle(capsule("ctx", "pipe", input=raw, env={"JACKIN_CTX_RETENTION_SECONDS": "1"}).stdout)
    time.sleep(1.5)
    r = capsule("ctx", "expand", h)
    assert r.returncode == 2 and b"retention" in r.stderr


def test_gain_table_json_and_since(capsule):
    capsule("ctx", "run", "--", "seq", "1", "4000")
    capsule("ctx", "run", "--", "git", "log", "-n", "50", "--stat")
    table = capsule("ctx", "gain").stdout.decode()
    assert "TOTAL" in table and "git" in table
    data = json.loads(capsule("ctx", "gain", "--json").stdout)
    total = data["total"]
    assert total["emissions"] >= 1 and total["raw_tokens"] > total["emitted_tokens"]
    assert sum(f["raw_tokens"] for f in data["families"]) == total["raw_tokens"]
    future = json.loads(capsule("ctx", "gain", "--json", "--since", "2999-01-01").stdout)
    assert future["total"]["emissions"] == 0
    assert capsule("ctx", "gain", "--since", "yesterday-ish").returncode == 2
    listing = capsule("ctx", "gain", "--emissions", "5").stdout.decode()
    assert "git log -n 50 --stat" in listing
    rows = json.loads(capsule("ctx", "gain", "--json", "--emissions", "5").stdout)["emissions"]
    assert [r["command"] for r in rows][-1] == "git log -n 50 --stat"


def test_approximate_counts_are_labelled(state_dir, monkeypatch):
    from capsule.cli.gain import render
    from capsule.engine import Engine
    from capsule.measure import ledger
    from capsule.ground import tokens

    monkeypatch.setattr(tokens, "_encoder", None)
    monkeypatch.setattr(tokens, "_failed", True)
    engine = Engine(state_dir)
    engine.observe(Observation("".join(f"row {i}\n" for i in range(2000)).encode(), command="seq 1 2000"))
    rows = engine.ledger.rows()
    assert rows[-1]["token_label"] == "approx"
    assert "(approx)" in render(ledger.summarise(rows))


def test_footer_command_runs_as_printed_in_sh_and_bash(capsule, state_dir):
    """The footer's command, pasted into sh or bash as printed, gives the original back (issue 9.6)."""
    import os
    import sys

    raw = "".join(f"row {i}\n" for i in range(1000)).encode()
    out = capsule("ctx", "pipe", input=raw).stdout
    m = re.search(rb"\[full output: (capsule ctx expand [^\]]*)\]", out)
    assert m and FOOTER.search(m.group(1)), out[-300:]
    command = m.group(1).decode()
    bindir = os.path.dirname(sys.executable)  # the venv's `capsule` entry point
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}", "JACKIN_CTX_STATE_DIR": str(state_dir)}
    for shell in ("bash", "sh"):
        r = subprocess.run([shell, "-c", command], capture_output=True, env=env, timeout=60)
        assert r.returncode == 0 and r.stdout == raw, (shell, r.stderr[-300:])


def test_a_reader_that_stops_early_ends_the_command_quietly(capsule, state_dir):
    """`capsule ctx expand H | head`: the reader leaves, the rest is not wanted; no traceback."""
    import os
    import sys

    raw = "".join(f"{i}\n" for i in range(1, 300001)).encode()          # far past a pipe's buffer
    h = _handle(capsule("ctx", "pipe", "--cmd", "seq 1 300000", input=raw).stdout)
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "expand", h], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdout.read(10) == raw[:10]
    proc.stdout.close()                                                   # as `head -c 10` does
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert err == b"", err.decode()[-800:]
