"""Shim overhead and supervisor start-to-ready, measured in one run.

For each command: the real binary, the shim as a passthrough (not an agent call: exec only), the
shim on an agent call (fork, capture, round trip to the warm engine, emit), and the engine's own
work on that output before the reply (an in-process twin of the supervisor's engine). Runs are
interleaved so machine noise hits all four alike; medians over N runs.
Budget (DESIGN, issue 32): <= 3 ms median added over the raw command plus the engine's own work
(door column, wall). A loaded machine makes wall noisy: the CPU table gives the same door in CPU
(the supervisor's threads' run time per call over its engine's, plus the shim's over the raw command).
Supervisor start: until its socket answers PING, until its agent runs, until its engine serves (STATUS).
--against TREE: a second supervisor from another checkout of capsule (its code on PYTHONPATH; the same
shims and client) answers the same agent calls, interleaved with these: before/after in one run.

    python benchmarks/bench_shim.py [-n 40] [--against /path/to/other/tree]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from capsule import shims
from capsule.agents import limits
from capsule.ground import switches
from capsule.policy import plan as planning
from capsule.policy.manifest import load_role
from capsule.supervisor import control_server, subsystems
from capsule.shims import door

ROOT = Path(__file__).resolve().parents[1]
BUDGET_MS = 3.0
COMMANDS = [
    ["git", "--version"],
    ["git", "status", "--short"],
    ["git", "log", "-n", "20"],
    ["ls", "-la", "/usr/bin"],
    ["cat", "README.md"],
    ["python3", "-c", "pass"],
]


def start_supervisor(state: Path, tree: str | None = None) -> tuple[subprocess.Popen, dict[str, tuple[float, float]]]:
    """(process, {milestone: (seconds since start, the supervisor's CPU ms by then)}) for its
    milestones: ready (the socket answers PING), agent (the agent's first act, a marker file, exists),
    warm (its engine serves: STATUS answered). CPU is the steadier figure on a loaded machine.
    tree: the supervisor runs that checkout's capsule (PYTHONPATH) instead of this one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    if tree:        # and its cwd there: `python -m` puts the cwd first on sys.path, before PYTHONPATH
        env["PYTHONPATH"] = tree
    env["JACKIN_CTX_STATE_DIR"] = str(state)
    sock = state / "engine.sock"
    mark = state.parent / f"{state.name}.agent"
    t0, t0_wall = time.monotonic(), time.time()
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "supervise", "--role", "python-dev", "--",
                             "sh", "-c", f': > "{mark}"; exec sleep 600'],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tree or ROOT)
    stamps: dict[str, tuple[float, float]] = {}

    def stamp(name: str, secs: float | None = None) -> None:
        stamps[name] = (time.monotonic() - t0 if secs is None else secs, process_cpu_ms(proc.pid))

    while not sock.exists():
        if time.monotonic() - t0 > 60:
            raise TimeoutError("supervisor did not create its socket")
        time.sleep(0.002)
    try:
        control_server.wait_ready(sock, 60, warm=False)
    except TypeError:       # an older tree: its socket answered only once its engine was warm
        control_server.wait_ready(sock, 60)
    stamp("ready")
    warm = threading.Thread(target=lambda: (control_server.status(sock, 60), stamp("warm")))
    warm.start()
    while not mark.exists():
        if time.monotonic() - t0 > 60:
            raise TimeoutError("the supervisor did not start its agent")
        time.sleep(0.002)
    stamp("agent", mark.stat().st_mtime - t0_wall)
    warm.join()
    return proc, stamps


SERVER_CPU: dict[str, float] = {}  # the supervisor's CPU ms per agent call (its socket, engine and row)
CPU: dict[str, list[float]] = {}  # CPU ms (user+sys) of the command and its shim, per variant key


def timed(argv: list[str], env: dict[str, str], key: str = "") -> float:
    """Wall ms; also records the CPU ms the run's processes used (less sensitive to a busy machine)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    wall = (time.perf_counter() - t0) * 1000.0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if key:
        CPU.setdefault(key, []).append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000.0)
    return wall


ENGINE_CPU: dict[str, list[float]] = {}   # CPU ms per call of the in-process twin: the emission and its ledger row


def twin_call(engine, argv: list[str], out: bytes, err: bytes, code: int, meta: dict[str, str]) -> float:
    """Wall ms the engine spends before the reply on this output, one call: the same engine as the
    supervisor's (role, mode, deferred rows), the same client facts (meta) as the shim sends.
    ENGINE_CPU gets its CPU with the deferred row (drain): the supervisor's whole work per call.
    Called between the runs (interleaved), so the machine's load hits it as it hits them. It runs on
    this process's first thread to encode, as the supervisor's engine thread does (control_server.
    EngineThread): tiktoken is ~1/3 slower a token on any other thread, a cost the door would own."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    door.observe_command(engine, " ".join(argv), out, err, code, 1.0, cwd=str(ROOT), meta=meta)
    wall = (time.perf_counter() - t0) * 1000.0
    if engine.pending():
        engine.drain()
    ENGINE_CPU.setdefault(" ".join(argv), []).append((time.process_time() - c0) * 1000.0)
    return wall


def process_cpu_ms(pid: int) -> float:
    """CPU ms a running process has used: its threads' run time (schedstat, ns), else utime + stime
    (clock ticks of 10 ms: sum many calls before dividing). A thread that ended since is not in the
    sum: the server's threads live as long as it serves (supervisor/accept_pool.py)."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e6
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=40, help="runs per variant (default 40)")
    ap.add_argument("--starts", type=int, default=5, help="supervisor starts to time (default 5)")
    ap.add_argument("--against", metavar="TREE", help="also time the agent calls against a supervisor "
                    "running this other checkout of capsule, interleaved (before/after in one run)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="capsule-bench-"))
    try:
        starts: dict[str, list[tuple[float, float]]] = {"ready": [], "agent": [], "warm": []}
        for i in range(args.starts):
            proc, stamps = start_supervisor(tmp / f"s{i}")
            for name, (secs, cpu) in stamps.items():
                starts[name].append((secs * 1000, cpu))
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        state = tmp / "state"
        proc, _ = start_supervisor(state)
        role = load_role("python-dev")      # the in-process twin of the supervisor's warm engine
        engine = subsystems.warm_engine(tmp / "engine-twin", planning.effective_mode(role, switches.Switches.read()),
                                        role)
        shim_dir = tmp / "shims"
        shims.install(shim_dir, socket=str(state / "engine.sock"))
        kind = ("compiled: capsule-shim, capsule-capture" if (shim_dir / getattr(shims, "CAPTURE", "-")).is_file()
                else f"Python: {shims.shim_python()} -IS")
        base = {k: v for k, v in os.environ.items() if not k.startswith(("JACKIN_CTX_", "CLAUDECODE", "CODEX_"))}
        base["JACKIN_CTX_SOCKET"] = str(state / "engine.sock")
        path = "/usr/local/bin:/usr/bin:/bin"  # system tools, not version-manager shims (pyenv, asdf)
        raw_env = dict(base, PATH=path)
        pass_env = dict(base, PATH=f"{shim_dir}:{path}")
        # The agent's tool-call shell records its stdout/stderr identity (capsule-env.sh); here the
        # "tool call" writes to /dev/null, so that is the agent's view the shim compares against.
        null = os.stat(os.devnull)
        view = f"{null.st_dev}:{null.st_ino}"
        out_var = getattr(switches, "AGENT_OUT", "JACKIN_CTX_AGENT_OUT")  # (older trees: ignored)
        # the client capsule launched (its marker) and its tool mark: an agent call
        agent_env = dict(pass_env, CLAUDECODE="1", JACKIN_CTX_AGENT="claude", **{out_var: f"bench {view} {view}"})
        other = None                        # --against: the other tree's supervisor, the same shims
        if args.against:
            other_proc, _ = start_supervisor(tmp / "state-other", args.against)
            shims.install(tmp / "shims-other", socket=str(tmp / "state-other" / "engine.sock"))
            other = (other_proc, dict(agent_env, PATH=f"{tmp / 'shims-other'}:{path}",
                                      JACKIN_CTX_SOCKET=str(tmp / "state-other" / "engine.sock")))
        meta = {k: agent_env[k] for k in limits.env_names() if k in agent_env}    # what the shim forwards
        rows = []
        served_before = control_server.status(state / "engine.sock")["served"]
        for argv in COMMANDS:
            real = shutil.which(argv[0], path=path)
            samples: dict[str, list[float]] = {"raw": [], "pass": [], "agent": [], "engine": [], "other": []}
            done = subprocess.run([real, *argv[1:]], env=raw_env, capture_output=True, cwd=ROOT)
            for _ in range(3):  # warm the page cache, and both engines on this output
                timed([real, *argv[1:]], raw_env)
                timed(argv, agent_env)
                if other:
                    timed(argv, other[1])
                twin_call(engine, argv, done.stdout, done.stderr, done.returncode, meta)
            name = " ".join(argv)
            ENGINE_CPU.pop(name, None)
            sup0 = process_cpu_ms(proc.pid)
            other0 = process_cpu_ms(other[0].pid) if other else 0.0
            for _ in range(args.n):
                samples["raw"].append(timed([real, *argv[1:]], raw_env, f"{name}|raw"))
                samples["pass"].append(timed(argv, pass_env, f"{name}|pass"))
                samples["agent"].append(timed(argv, agent_env, f"{name}|agent"))
                if other:
                    samples["other"].append(timed(argv, other[1], f"{name}|other"))
                samples["engine"].append(twin_call(engine, argv, done.stdout, done.stderr, done.returncode, meta))
            SERVER_CPU[name] = (process_cpu_ms(proc.pid) - sup0) / args.n
            if other:
                SERVER_CPU[f"{name}|other"] = (process_cpu_ms(other[0].pid) - other0) / args.n
            med = {k: statistics.median(v) if v else 0.0 for k, v in samples.items()}
            rows.append((name, med["raw"], med["pass"], med["agent"], med["engine"], med["other"]))
        env_file = shim_dir / getattr(shims, "ENV_FILE", "capsule-env.sh")
        env_cost = None
        if env_file.is_file():  # absent before the identity decision existed (comparing old trees)
            call_env = dict(pass_env, CLAUDECODE="1")
            plain, sourced = [], []
            for _ in range(args.n):
                plain.append(timed(["bash", "-c", "true"], call_env))
                sourced.append(timed(["bash", "-c", f". {env_file}\ntrue"], call_env))
            env_cost = (statistics.median(plain), statistics.median(sourced))
        served = control_server.status(state / "engine.sock")["served"] - served_before
        for p in (proc, other[0]) if other else (proc,):
            p.send_signal(signal.SIGTERM)
            p.wait(30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"shim overhead, median of {args.n} interleaved runs (ms); shims {kind}")
    print("added = agent - raw; engine = the engine's own work on that output before the reply (in-process twin,")
    print("the supervisor's engine and client facts, called between the runs);")
    print("door = added - engine: what the shim and socket cost, the part the 3 ms budget governs")
    against = f" {'other':>8} {'door':>7}" if args.against else ""
    print(f"{'command':<24} {'raw':>7} {'passthru':>8} {'agent':>8} {'added':>8} {'engine':>7} {'door':>7}    {against}")
    worst = 0.0
    for name, raw, passthru, agent, eng, other_agent in rows:
        added = agent - raw
        door = added - eng
        worst = max(worst, door)
        them = f" {other_agent:8.2f} {other_agent - raw - eng:+7.2f}" if args.against else ""
        print(f"{name:<24} {raw:7.2f} {passthru:8.2f} {agent:8.2f} {added:+8.2f} {eng:7.2f} {door:+7.2f}"
              f"  {'ok' if door <= BUDGET_MS else 'OVER'}{them}")
    if args.against:
        print(f"other: the same agent calls answered by a supervisor running {args.against}")
    print(f"\nCPU ms (user+sys of the command and its shim; the engine's share runs in the supervisor), median")
    print(f"{'command':<24} {'raw':>7} {'passthru':>8} {'agent':>8} {'pass-raw':>9} {'agent-raw':>9}")
    for name, *_ in rows:
        c = {v: statistics.median(CPU[f"{name}|{v}"]) for v in ("raw", "pass", "agent")}
        print(f"{name:<24} {c['raw']:7.2f} {c['pass']:8.2f} {c['agent']:8.2f} {c['pass'] - c['raw']:+9.2f} "
              f"{c['agent'] - c['raw']:+9.2f}")
    print("\nsupervisor CPU ms per agent call (socket handling + engine + ledger row; its threads' run time"
          " over the runs)\nagainst the in-process twin's engine CPU (emission + row): server = the difference;"
          " door cpu = server + the shim's CPU over raw (agent-raw above): the door's cost in CPU, which a"
          " loaded machine inflates less than wall")
    print(f"{'command':<24} {'supervisor':>10} {'engine':>8} {'server':>8} {'door cpu':>9}"
          + (f" {'other':>8} {'server':>8} {'door cpu':>9}" if args.against else ""))
    for name, *_ in rows:
        sup, eng = SERVER_CPU[name], statistics.median(ENGINE_CPU[name])
        raw_cpu = statistics.median(CPU[f"{name}|raw"])
        shim = statistics.median(CPU[f"{name}|agent"]) - raw_cpu
        them = ""
        if args.against:
            osup, oshim = SERVER_CPU[f"{name}|other"], statistics.median(CPU[f"{name}|other"]) - raw_cpu
            them = f" {osup:8.2f} {osup - eng:+8.2f} {osup - eng + oshim:+9.2f}"
        print(f"{name:<24} {sup:10.2f} {eng:8.2f} {sup - eng:+8.2f} {sup - eng + shim:+9.2f}{them}")
    if env_cost:
        print(f"agent env file (capsule-env.sh, once per tool call): bash -c true {env_cost[0]:.2f} ms, "
              f"sourcing it first {env_cost[1]:.2f} ms ({env_cost[1] - env_cost[0]:+.2f} ms)")
    agent_runs = len(COMMANDS) * (args.n + 3)
    print(f"engine round trips served: {served} of {agent_runs} agent calls (fewer: some fell open, raw)")
    what = {"ready": "ready (socket answers PING)", "agent": "agent (its first act)",
            "warm": "warm engine (STATUS answered)"}
    print(f"supervisor start-to-milestone over {args.starts} starts: wall ms median (min-max); the supervisor's"
          f" CPU ms by then, median (min-max)")
    for name, label in what.items():
        wall, cpu = [w for w, _ in starts[name]], [c for _, c in starts[name]]
        print(f"  {label:<31} {statistics.median(wall):6.0f} ({min(wall):.0f}-{max(wall):.0f})   "
              f"cpu {statistics.median(cpu):5.0f} ({min(cpu):.0f}-{max(cpu):.0f})")
    return 0 if worst <= BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
