"""benchmarks/bench_media.py runs from a plain clone (as a subprocess, from /) and prints its table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_media.py"


def test_bench_media_prints_tokens_before_and_after_per_kind():
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    done = subprocess.run([sys.executable, str(BENCH), "--family", "anthropic"], capture_output=True, text=True,
                          timeout=300, cwd="/", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 7
    by = {line[:52].strip(): line[52:].split() for line in rows}
    pointer = by["code screenshot, source in workspace"]
    assert pointer[1] == "pointer" and int(pointer[3].replace(",", "")) < 100
    pdf = by["20-page PDF as a document block"]
    assert pdf[1] == "text" and int(pdf[3].replace(",", "")) <= 0.35 * int(pdf[2].replace(",", ""))
