"""Warm `observe` of every large output, each time a text the engine has not seen, next to `cat`.

bench_speed's warm row is one generated log; this one is every corpus output of at least --min-kb
(all tool families) and any real file given with --file, so a speed-up is seen where nobody tuned
for it. Each output is observed once to warm the engine, then --runs times with its ASCII digits
permuted (a new text each time: every line is new to the engine's caches, the shape stays).
Columns per family: cases, KiB, CPU ms of observe on the agent's path (p50 per case, total), CPU ms
of the count and ledger row after it (total), and `cat` of the same bytes (total, child CPU).

    python benchmarks/bench_observe.py [--min-kb 20] [--runs 3] [--file PATH[=COMMAND] ...] [--no-corpora]
                                       [--python PATH]
    # --file /var/log/dpkg.log='python3 app.py': a real log observed as a program's output
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import interpreter  # noqa: E402
from corpora import default_corpora  # noqa: E402
from capsule.ground.types import Observation


def cases(min_bytes: int, files: list[str], with_corpora: bool) -> list[tuple[str, str, bytes, str, int]]:
    """(family, name, output, command, exit code) of every output to observe."""
    from corpus_cases import load_case  # noqa: PLC0415

    out = []
    for source, folder in default_corpora() if with_corpora else []:
        for c in sorted(p for p in folder.iterdir() if (p / "output.txt").exists()):
            case = load_case(c)
            if len(case["output"]) >= min_bytes:
                out.append((case["family"], f"{source}/{c.name}", case["output"], case["command"] or "", case["exit_code"]))
    for spec in files:
        path, _, command = spec.partition("=")
        data = Path(path).read_bytes()
        command = command or f"cat {path}"
        out.append(("file", f"{path} as `{command}`", data, command, 0))
    return out


def cat_ms(data: bytes, tmp: Path) -> float:
    path = tmp / "cat.bin"
    path.write_bytes(data)
    proc = subprocess.Popen(["cat", str(path)], stdout=subprocess.DEVNULL)
    _, _, ru = os.wait4(proc.pid, 0)
    return (ru.ru_utime + ru.ru_stime) * 1000


def measure(items, runs: int, tmp: Path) -> list[dict]:
    from capsule.engine import Engine  # noqa: PLC0415

    engine = Engine(tmp / "state", mode="standard", scope="bench")
    engine.defer = True
    shuffle = random.Random(7)
    rows = []
    for family, name, data, command, code in items:
        engine.observe(Observation(data, command=command, exit_code=code))
        engine.drain()
        agent, after = [], []
        for _ in range(runs):
            digits = list(b"0123456789")
            shuffle.shuffle(digits)
            text = data.translate(bytes.maketrans(b"0123456789", bytes(digits)))
            c0 = time.process_time()
            engine.observe(Observation(text, command=command, exit_code=code))
            c1 = time.process_time()
            engine.drain()
            agent.append((c1 - c0) * 1000)
            after.append((time.process_time() - c1) * 1000)
        rows.append({"family": family, "name": name, "kib": len(data) / 1024, "observe": statistics.median(agent),
                     "after": statistics.median(after), "cat": cat_ms(data, tmp)})
    return rows


def print_table(rows: list[dict], slowest: int) -> None:
    fams: dict[str, list[dict]] = {}
    for r in rows:
        fams.setdefault(r["family"], []).append(r)
    head = f"{'family':<18}{'cases':>6}{'KiB':>9}{'observe p50':>13}{'observe total':>15}{'after total':>13}{'cat total':>11}"
    print(head)
    print("-" * len(head))
    for name, rs in sorted(fams.items()) + [("TOTAL", rows)]:
        print(f"{name:<18}{len(rs):>6}{sum(r['kib'] for r in rs):>9.0f}"
              f"{statistics.median(r['observe'] for r in rs):>13.1f}{sum(r['observe'] for r in rs):>15.1f}"
              f"{sum(r['after'] for r in rs):>13.1f}{sum(r['cat'] for r in rs):>11.1f}")
    print("\nslowest observes (CPU ms, agent's path):")
    for r in sorted(rows, key=lambda r: -r["observe"])[:slowest]:
        print(f"  {r['observe']:8.1f}  {r['kib']:6.0f} KiB  {r['name']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-kb", type=float, default=20, help="corpus outputs at least this large (default 20)")
    ap.add_argument("--runs", type=int, default=3, help="new texts observed per output (default 3)")
    ap.add_argument("--file", action="append", default=[], metavar="PATH[=COMMAND]",
                    help="a real file observed as COMMAND's output (default `cat PATH`); repeatable")
    ap.add_argument("--no-corpora", action="store_true", help="only the --file outputs")
    ap.add_argument("--slowest", type=int, default=8, help="list this many slowest outputs (default 8)")
    interpreter.add_option(ap)
    args = ap.parse_args()
    interpreter.run_under(ap, args.python, __file__)
    for spec in args.file:
        if not Path(spec.partition("=")[0]).is_file():
            ap.error(f"--file {spec}: no such file")
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="capsule-observe-") as t:
        os.environ["JACKIN_CTX_STATE_DIR"] = str(Path(t) / "state")
        items = cases(int(args.min_kb * 1024), args.file, not args.no_corpora)
        if not items:
            print("bench_observe: nothing to observe (no corpus output that large, no --file)", file=sys.stderr)
            return 2
        rows = measure(items, args.runs, Path(t))
    import capsule  # noqa: PLC0415

    print(f"capsule from {Path(capsule.__file__).parent.parent}; CPU ms, medians of {args.runs} new texts per output")
    print_table(rows, args.slowest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
