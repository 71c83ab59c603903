"""A command line that is not UTF-8 (a file name of raw bytes) still gets its ledger row.

Python hands such arguments over as lone surrogates, which SQLite cannot store as text; the row
was lost ("ledger write failed: UnicodeEncodeError"). The row shows the odd bytes escaped."""

from __future__ import annotations

import os
import subprocess
import sys

from capsule.measure.ledger import Ledger


def test_a_command_line_of_raw_bytes_keeps_its_row(tmp_path):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(tmp_path / "state")}
    lines = b"".join(b"line %d of a listing\n" % i for i in range(400))
    (tmp_path / "data.txt").write_bytes(lines)
    argv = [sys.executable, "-m", "capsule", "ctx", "run", "--", "cat", b"data.txt", b"./\xff"]
    done = subprocess.run([os.fsencode(a) for a in argv], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert done.returncode == 1                       # cat's own status: the second file does not exist
    assert b"line 399 of a listing" in done.stdout or b"399" in done.stdout
    assert b"ledger write failed" not in done.stderr, done.stderr.decode(errors="replace")
    ledger = Ledger(tmp_path / "state" / "ledger.db", readonly=True)
    try:
        rows = ledger.rows()
    finally:
        ledger.close()
    assert sorted(r["stream"] for r in rows) == ["stderr", "stdout"]      # cat's listing and its error
    assert {r["command"] for r in rows} == {"cat data.txt './\\xff'"}
