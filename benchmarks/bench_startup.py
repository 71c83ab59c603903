"""Cold start of the embedded door against the raw command; `capsule ctx doctor`, `ctx gain` and `ctx report`
against `capsule --help`; `capsule statusline` (Claude Code runs it after each message: target <= 50 ms)
against a bare Python start. Then `ctx run -- git log --stat -n 40` paired (interleaved) three ways: the
raw git, `ctx run` with no engine (JACKIN_CTX_NO_DAEMON=1: the run's own, a child that outlives it
by its rows, counted too) and `ctx run` with a warm engine (the engine daemon, cli/warm.py): CPU
(user+sys) of the client process and its command,
which a loaded machine inflates less than wall time; target: the warm client <= 60 ms over git.
--callgrind adds each one's instruction count (valgrind, the client process alone: a warm run
execs the compiled capture, and both images are counted, the command not). --baseline CAPSULE adds
another installation's `ctx run` rows (its own state dir and daemon), interleaved in the same pairs:
before/after in one run.

    python benchmarks/bench_startup.py [--runs N] [--callgrind] [--baseline OTHER/.venv/bin/capsule] [--paired-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
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


def cpu_ms(argv: list[str], env: dict) -> float:
    """CPU ms (user+sys) of one run of argv and its children, those it left running included (a cold
    `ctx run`'s engine child writes its rows after the run: this process adopts and reaps it)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    reap_adopted()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000


def adopt_orphans() -> None:
    """Descendants a run leaves behind become this process's children (PR_SET_CHILD_SUBREAPER), so
    their CPU counts in RUSAGE_CHILDREN once reaped (set after the engine daemons have started)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)     # PR_SET_CHILD_SUBREAPER


def reap_adopted(timeout_s: float = 60.0) -> None:
    """Reap adopted children until there are none (a daemon started meanwhile would never end: give up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                time.sleep(0.005)
        except ChildProcessError:
            return


def instructions(argv: list[str], env: dict, command: str) -> float | None:
    """Millions of instructions the client process ran (callgrind): what ran before an exec (dumped
    there) plus the image it became; its children (the command, a forked finisher) not counted."""
    if not shutil.which("valgrind"):
        return None
    with tempfile.TemporaryDirectory() as d:
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.%p",
                               "--dump-before=*execve*", "--trace-children=yes",
                               f"--trace-children-skip=*/{command}", *argv],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
        first = re.search(rb"==(\d+)==", done.stderr)
        if not first:
            return None
        pid = first.group(1).decode()
        total = 0
        for name in os.listdir(d):
            if name == f"cg.{pid}" or name.startswith(f"cg.{pid}."):
                with open(os.path.join(d, name), "rb") as f:
                    found = re.search(rb"^totals: (\d+)", f.read(), re.M)
                total += int(found.group(1)) if found else 0
    return total / 1e6


def warm_engine(capsule: str, argv: list[str], env: dict) -> bool:
    """Start the engine daemon for env (one run) and wait until it answers; False on a tree without one.
    The socket is named by that installation's own interpreter (its key holds the installation)."""
    python = os.path.join(os.path.dirname(capsule), "python")
    named = subprocess.run([python, "-c", "from capsule.ground import paths; print(paths.daemon_socket())"],
                           capture_output=True, env=env, check=False, cwd="/")   # not this tree's capsule/
    if named.returncode != 0:
        return False
    sock = named.stdout.decode().strip()
    subprocess.run([capsule, "ctx", "run", "--", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, check=False)
    from capsule.supervisor import control_server

    try:
        control_server.wait_ready(sock, 120)
    except TimeoutError:
        return False
    return True


def paired(capsule: str, state: str, runs: int, callgrind: bool, baseline: str | None = None) -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    git = ["git", "-C", root, "log", "--stat", "-n", "40"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    cold_env = {**base, "JACKIN_CTX_STATE_DIR": state, "JACKIN_CTX_NO_DAEMON": "1"}
    warm_env = {**base, "JACKIN_CTX_STATE_DIR": state}
    run = [capsule, "ctx", "run", "--", *git]
    variants = [("git log --stat -n 40", git, base), ("ctx run cold, no engine", run, cold_env)]
    if warm_engine(capsule, git, warm_env):
        variants.append(("ctx run, warm engine", run, warm_env))
    cpu_ms(run, cold_env)       # the stores and the tokenizer's tables exist before the first pair
    if baseline:
        other = tempfile.mkdtemp(prefix="bench-baseline-")
        base_run = [baseline, "ctx", "run", "--", *git]
        base_cold = {**cold_env, "JACKIN_CTX_STATE_DIR": other}
        base_warm = {**warm_env, "JACKIN_CTX_STATE_DIR": other}
        variants.append(("baseline: ctx run cold, no engine", base_run, base_cold))
        cpu_ms(base_run, base_cold)
        if warm_engine(baseline, git, base_warm):
            variants.append(("baseline: ctx run, warm engine", base_run, base_warm))
    samples: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    adopt_orphans()
    for _ in range(runs):
        for name, argv, env in variants:
            samples[name].append(cpu_ms(argv, env))
    raw = statistics.median(samples[variants[0][0]])
    print(f"\n`ctx run -- git log --stat -n 40`, {runs} interleaved runs: CPU ms (user+sys, client + command)")
    print(f"{'variant':<38}{'p50 CPU':>10}{'over git':>10}{'M instr':>10}")
    for name, argv, env in variants:
        med = statistics.median(samples[name])
        ir = instructions(argv, env, "git") if callgrind and argv is not git else None
        print(f"{name:<38}{med:>10.1f}{med - raw:>+10.1f}{'' if ir is None else f'{ir:.0f}':>10}")
    if len(variants) < 3:
        print("ctx run, warm engine: n/a (this tree has no engine daemon)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--callgrind", action="store_true", help="also count the ctx run clients' instructions")
    ap.add_argument("--baseline", help="another installation's capsule (e.g. main's .venv/bin/capsule): its rows too")
    ap.add_argument("--paired-only", action="store_true", help="only the paired `ctx run -- git log` rows")
    args = ap.parse_args()
    capsule = os.path.join(os.path.dirname(sys.executable), "capsule")
    if args.paired_only:
        with tempfile.TemporaryDirectory() as state:
            paired(capsule, state, args.runs, args.callgrind, args.baseline)
        return 0
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
        paired(capsule, state, args.runs, args.callgrind, args.baseline)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
