"""What the shims cost programs and the agent: the compiled shim next to the Python shim, one run.

Rows (medians; wall ms):
  script loop      200 x `echo hello | sed s/h/j/ | cat` in one bash, inside an agent's tool call whose
                   view is elsewhere (a build or configure script's own pipes): no shims, Python shim,
                   compiled shim; the ratio to no shims (target <= 1.10)
  program consumer one `sed` whose stdout a program reads (a pipe), per call, over the real command
  agent's call     one `cat README.md` that is the agent's own view (captured, engine round trip)
  agent's call, instant engine
                   the same call against a socket of this benchmark that answers at once with the
                   bytes it was sent (a thread reading the request, no engine): what the shim itself
                   adds (start, capture, the socket's round trip, emission), i.e. the agent's call
                   minus the engine's work (target: <= 3 ms over no shims)

"python" is the Python shim alone (installed where there is no C compiler); "compiled" is the
freestanding capsule-shim with capsule-capture behind it (the default with a compiler).

    python benchmarks/bench_shim_loop.py [-n 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capsule import shims  # noqa: E402
from capsule.ground import switches  # noqa: E402
from capsule.supervisor import control_server  # noqa: E402
from tests.fakes import unix_socket  # noqa: E402

LOOP = "for i in $(seq 200); do echo hello | sed s/h/j/ | cat; done"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def start_supervisor(state: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env["JACKIN_CTX_STATE_DIR"] = str(state)
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "supervise", "--role", "python-dev", "--",
                             "sleep", "600"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = state / "engine.sock"
    deadline = time.monotonic() + 60
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    control_server.wait_ready(sock, 60)
    return proc


def instant_engine(path: Path) -> socket.socket:
    """A socket answering each OBS1 request at once with the stdout and stderr it carries."""

    def echo(conn: socket.socket) -> None:
        with conn:
            head, _, body = unix_socket.request(conn, 1 << 20).partition(b"\n")
            _code, _us, n_cmd, n_out, n_err, *_ = (int(f) for f in head.split()[1:])
            conn.sendall(b"OK %d %d\n" % (n_out, n_err) + body[n_cmd:n_cmd + n_out + n_err])

    return unix_socket.serve(path, echo)


CPU: dict[tuple[str, str], list[float]] = {}   # (row, variant) -> CPU ms (user+sys) of the run's processes


def wall(argv: list[str], env: dict[str, str], stdout=subprocess.DEVNULL, key: tuple[str, str] | None = None) -> float:
    """Wall ms; with `key`, also the CPU ms the run used (steadier than wall on a busy machine)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=stdout, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=ROOT)
    ms = (time.perf_counter() - t0) * 1000.0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if key:
        CPU.setdefault(key, []).append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000.0)
    return ms


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=7, help="runs per variant (default 7; 20x that for single calls)")
    args = ap.parse_args()
    if shims.compiler() is None:
        print("no C compiler: only the Python shim can be measured", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="capsule-bench-loop-"))
    proc = start_supervisor(tmp / "state")
    try:
        sock = str(tmp / "state" / "engine.sock")
        dirs = {"python": tmp / "py", "compiled": tmp / "c"}
        for name, d in dirs.items():
            shims.install(d, socket=sock, compiled=name == "compiled")
        base = {k: v for k, v in os.environ.items() if not k.startswith(("JACKIN_CTX_", "CLAUDECODE", "CODEX_"))}
        null = os.stat(os.devnull)
        view = f"{null.st_dev}:{null.st_ino}"
        elsewhere = tmp / "agent-view"            # the tool call's own output file, not what the script writes
        elsewhere.touch()
        st = elsewhere.stat()
        # an agent's tool call (Claude Code): for the loop and the consumer its view is another file;
        # for the agent's own call it is /dev/null, where that call writes
        agent = dict(base, CLAUDECODE="1", JACKIN_CTX_SOCKET=sock,
                     **{switches.AGENT_OUT: f"bench {st.st_dev}:{st.st_ino} {st.st_dev}:{st.st_ino}"})
        envs = {"none": dict(agent, PATH=SYSTEM_PATH)}
        envs.update({k: dict(agent, PATH=f"{d}:{SYSTEM_PATH}") for k, d in dirs.items()})
        own_envs = {k: dict(env, **{switches.AGENT_OUT: f"bench {view} {view}"}) for k, env in envs.items()}
        instant = instant_engine(tmp / "instant.sock")
        bare_envs = {k: dict(env, JACKIN_CTX_SOCKET=str(tmp / "instant.sock")) for k, env in own_envs.items()}
        loop = {k: [] for k in envs}
        one = {k: [] for k in envs}
        own = {k: [] for k in envs}
        bare = {k: [] for k in envs}
        for k, env in envs.items():        # warm the page cache
            wall(["bash", "-c", LOOP], env)
            wall(["cat", "README.md"], own_envs[k])
        for _ in range(args.n):            # interleaved: machine noise hits every variant alike
            for k, env in envs.items():
                loop[k].append(wall(["bash", "-c", LOOP], env, key=("loop", k)))
        for _ in range(args.n * 20):
            for k, env in envs.items():
                one[k].append(wall(["sed", "s/h/j/", "README.md"], env, stdout=subprocess.PIPE, key=("one", k)))
                own[k].append(wall(["cat", "README.md"], own_envs[k], key=("own", k)))   # stdout /dev/null = the agent's view
                bare[k].append(wall(["cat", "README.md"], bare_envs[k], key=("bare", k)))
        instant.close()
        walls = {name: {k: statistics.median(v) for k, v in rows.items()} for name, rows in
                 (("loop", loop), ("one", one), ("own", own), ("bare", bare))}
        cpus = {name: {k: statistics.median(CPU[(name, k)]) for k in envs} for name in ("loop", "one", "own", "bare")}
        for title, med in (("wall ms", walls), ("CPU ms (user+sys)", cpus)):
            table(title, med)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return 0


def table(title: str, med: dict) -> None:
    print(title)
    print(f"{'row':<34}{'no shims':>10}{'python':>10}{'compiled':>10}{'py/none':>9}{'c/none':>9}")
    m = med["loop"]
    print(f"{'script loop (200x echo|sed|cat)':<34}{m['none']:>10.1f}{m['python']:>10.1f}{m['compiled']:>10.1f}"
          f"{m['python'] / m['none']:>8.2f}x{m['compiled'] / m['none']:>8.2f}x")
    for key, label in (("one", "program consumer (sed | ...)"), ("own", "agent's own call (cat)"),
                       ("bare", "  same, instant engine (shim only)")):
        m = med[key]
        print(f"{label:<34}{m['none']:>10.2f}{m['python']:>10.2f}{m['compiled']:>10.2f}"
              f"{'+%.2f' % (m['python'] - m['none']):>9}{'+%.2f' % (m['compiled'] - m['none']):>9}")


if __name__ == "__main__":
    raise SystemExit(main())
