"""One very long line (issue 11, Liveness): a 15 MB line with no spaces took 52 s and 900 MB through
`ctx pipe` (the whole text tokenised three times, held whole). A line over LONG_LINE_BYTES now takes
the streaming path: head, tail and error windows of it, bounded memory, the original exact on expand."""

from __future__ import annotations

import os
import subprocess
import sys

from capsule.engine import LONG_LINE_BYTES, Engine, has_long_line
from capsule.ground.types import Observation

MB = 1 << 20


def test_a_15_mb_line_without_spaces_goes_through_ctx_pipe_in_bounded_memory(tmp_path, state_dir):
    line = tmp_path / "line.txt"
    line.write_bytes(b"QUFB" * (15 * MB // 4) + b" error: disk quota exceeded " + b"QUFB" * 100_000 + b"\n")
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    probe = ("import os, resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], stdin=sys.stdin, stdout=open(os.environ['OUT'], 'wb'))\n"
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out_path = tmp_path / "out"
    with open(line, "rb") as stdin:
        res = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "capsule", "ctx", "pipe"],
                             stdin=stdin, capture_output=True, env={**env, "OUT": str(out_path)}, timeout=300)
    code, peak_kb = (int(x) for x in res.stdout.split())
    shown = out_path.read_bytes()
    assert code == 0, res.stderr
    assert peak_kb < 250 * 1024, f"peak RSS {peak_kb // 1024} MB for a 15 MB line"   # was ~900 MB
    assert len(shown) < 100_000 and b"error: disk quota exceeded" in shown          # the error window kept
    handle = shown.rsplit(b"<<ccr:", 1)[1].split(b">>", 1)[0].decode()
    back = subprocess.run([sys.executable, "-m", "capsule", "ctx", "expand", f"<<ccr:{handle}>>"],
                          capture_output=True, env=env, timeout=120)
    assert back.returncode == 0 and back.stdout == line.read_bytes()


def test_the_long_line_rule(state_dir, tmp_path):
    short_lines = b"".join(b"x" * 1000 + b"\n" for _ in range(3000))       # 3 MB of short lines
    assert not has_long_line(short_lines)
    assert has_long_line(b"ok\n" + b"y" * (LONG_LINE_BYTES + 1) + b"\nok\n")
    assert not has_long_line(b"y" * LONG_LINE_BYTES)
    spool = tmp_path / "spool"
    raw = b"start\n" + b"z" * (2 * MB) + b"\nend\n"
    spool.write_bytes(raw)
    engine = Engine(state_dir)
    with open(spool, "rb") as f:
        out = engine.observe(Observation(spool=f, size=len(raw), digest="d" * 24, command="cat blob", stream="stdout", exit_code=0))
    assert out.handle and len(out.data) < 64_000 and out.data.startswith(b"start\n")
    assert engine.archive.get(out.handle) == raw
