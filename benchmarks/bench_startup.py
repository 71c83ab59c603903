"""Cold start of the embedded door against the raw command; `capsule ctx doctor`, `ctx gain` and `ctx report`
against `capsule --help`; `capsule statusline` (Claude Code runs it after each message: target <= 50 ms)
against a bare Python start.

    python benchmarks/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv: list[str], runs: int, env: dict, stdin: bytes = b"") -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    capsule = os.path.join(os.path.dirname(sys.executable), "capsule")
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "JACKIN_CTX_STATE_DIR": state}
        # (name, argv, the row it is compared with)
        cases = [
            ("true", ["true"], None),
            ("capsule ctx run -- true", [capsule, "ctx", "run", "--", "true"], "true"),
            ("git --version", ["git", "--version"], None),
            ("capsule ctx run -- git --version", [capsule, "ctx", "run", "--", "git", "--version"], "git --version"),
            ("seq 1 20000", ["seq", "1", "20000"], None),
            ("capsule ctx run -- seq 1 20000", [capsule, "ctx", "run", "--", "seq", "1", "20000"], "seq 1 20000"),
            ("capsule --help", [capsule, "--help"], None),
            ("capsule ctx doctor", [capsule, "ctx", "doctor"], "capsule --help"),   # target: at most 2x
            ("capsule ctx gain", [capsule, "ctx", "gain"], "capsule --help"),
            ("capsule ctx gain --by day", [capsule, "ctx", "gain", "--by", "day"], "capsule --help"),
            ("capsule ctx report", [capsule, "ctx", "report", "--claude-dir", state, "--codex-dir", state], "capsule --help"),
            ("python -c pass", [sys.executable, "-c", "pass"], None),
            ("capsule statusline", [capsule, "statusline"], "python -c pass"),            # target: <= 50 ms
        ]
        line = json.dumps({"session_id": "bench", "cost": {"total_cost_usd": 0.5},
                           "rate_limits": {"five_hour": {"used_percentage": 40, "resets_at": time.time() + 3600}}})
        timed(cases[1][1], 3, env)  # warm the page cache and create the stores
        timed(cases[-1][1], 1, env)
        print(f"{'command':<38}{'p50 ms':>10}{'p95 ms':>10}{'vs':>22}")
        p50: dict[str, float] = {}
        for name, argv, ref in cases:
            t = sorted(timed(argv, args.runs, env, line.encode() if name == "capsule statusline" else b""))
            p50[name] = statistics.median(t)
            vs = f"{p50[name] / p50[ref]:.2f}x {ref}" if ref else ""
            print(f"{name:<38}{p50[name]:>10.1f}{t[int(0.95 * (len(t) - 1))]:>10.1f}  {vs:>20}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
