"""One conformance test for every capture of the shell door (issue 32.1): the compiled capture, the
Python fallback shim and `capsule ctx run` go through the same cases, as an agent's tool call (a
bash that sourced capsule-env.sh): exit codes and signals, stdin passed through, a background job
that keeps running, a huge line, an engine whose state volume is full, and (for the two shims,
which speak the socket protocol of docs/shell-protocol.md) a dead or hung supervisor.

`ctx run` goes through three times: with its own engine (JACKIN_CTX_NO_DAEMON=1: a child of the run
serves it on a private socket, cli/own_engine.py) and the Python shim's capture ("ctx-run", as with
no C compiler) or the compiled one ("ctx-run-compiled", as a daemon of its settings built it), and
"ctx-daemon" against the warm engine daemon of its settings (cli/warm.py, supervisor/daemon.py):
there the run execs the same compiled capture the shim runs. It also gets the dead and hung cases:
a dead daemon (a socket nobody listens on, its lock free) means the in-process engine for that run
and a new daemon for the next; a hung one means raw output after the round trip's deadline. The
compiled capture runs all 256 exit codes in one tool call; the ones that start a Python per
command (the fallback shim, `ctx run`: 0.05-0.2 s of CPU each) run a spread of them (both ends, the
shell's 126/127, 128, the signal range). The cases are otherwise the same script, with `ctx run --`
in front of the command.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from capsule import shims
from capsule.ground import paths
from capsule.supervisor import control_server

IMPLEMENTATIONS = ["compiled", "python", "ctx-run", "ctx-run-compiled", "ctx-daemon"]
SOCKET_CLIENTS = ["compiled", "python"]
TOOLS = {
    "code": '#!/bin/sh\necho "exit $1"\nexit $1\n',
    "die": "#!/bin/sh\necho before\nkill -$1 $$\n",
    "echoin": "#!/bin/sh\nwhile IFS= read -r line; do echo \"got $line\"; done\n",
    # `make serve`: the server keeps running (and writing) after the command has returned
    "serve": "#!/bin/sh\n( sleep 1; echo 'server: late line' ) &\necho 'make: started the server'\n",
    "wide": "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' x\necho\necho 'exit 3 after a 3 MB line' >&2\nexit 3\n",
    "talk": "#!/bin/sh\ni=1; while [ $i -le 2000 ]; do echo \"out line $i of a long listing\"; i=$((i+1)); done\n"
            "echo 'err line' >&2\nexit 5\n",
}
SPREAD = [0, 1, 2, 37, 63, 126, 127, 128, 200, 254, 255]


class World:
    def __init__(self, root: Path, real: Path, sock: Path, dirs: dict[str, Path]):
        self.root, self.real, self.sock, self.dirs = root, real, sock, dirs

    def call(self, impl: str, script: str, sock: Path | None = None, timeout: float = 60, stdin=None, wrap=(),
             **extra):
        """script as one agent tool call; `{run}` is where `ctx run --` goes for ctx-run; `wrap`: a
        command the call runs under (it ends with `"$@"`)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JACKIN_CTX_", "CLAUDECODE", "CODEX_"))}
        env.update({"CLAUDECODE": "1", "JACKIN_CTX_AGENT": "claude",
                    "JACKIN_CTX_STATE_DIR": str(self.root / "run-state"), **extra})
        if impl in ("ctx-run", "ctx-run-compiled", "ctx-daemon"):
            env["PATH"] = f"{self.real}:/usr/bin:/bin"
            if impl == "ctx-run":
                env["JACKIN_CTX_NO_DAEMON"] = "1"
            elif impl == "ctx-run-compiled":
                env.update(JACKIN_CTX_NO_DAEMON="1", JACKIN_CTX_STATE_DIR=str(self.root / "run-state-c"))
                env.update(extra)
            else:
                env.update(JACKIN_CTX_STATE_DIR=str(self.root / "daemon-state"), JACKIN_CTX_DAEMON_IDLE="120")
                env.update(extra)
            text = script.replace("{run}", f"{sys.executable} -m capsule ctx run --")
        else:
            d = self.dirs[impl]
            env.update(PATH=f"{d}:{self.real}:/usr/bin:/bin", JACKIN_CTX_SOCKET=str(sock or self.sock))
            text = f". {d / shims.ENV_FILE}\n" + script.replace("{run} ", "")
        return subprocess.run([*wrap, "bash", "-c", text, "agent-call"], env=env, capture_output=True,
                              timeout=timeout, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)

    def served(self, impl: str = "compiled") -> int:
        return control_server.status(self.daemon() if impl == "ctx-daemon" else self.sock)["served"]

    def daemon(self, impl: str = "ctx-daemon", **extra) -> Path:
        """The engine daemon's socket for the ctx-daemon calls' settings (paths.daemon_socket)."""
        got = self.call(impl, f"{sys.executable} -c 'from capsule.ground import paths; "
                        "print(paths.daemon_socket())'", **extra)
        return Path(got.stdout.decode().strip())


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("conformance")
    real = root / "real"
    real.mkdir()
    for name, body in TOOLS.items():
        (real / name).write_text(body)
        (real / name).chmod(0o755)
    dirs = {}
    for impl in SOCKET_CLIENTS:
        dirs[impl] = root / impl
        shims.install(dirs[impl], names=list(TOOLS), compiled=impl == "compiled")
    assert (dirs["compiled"] / shims.CAPTURE).is_file(), "the compiled capture did not build"
    assert not (dirs["python"] / shims.CAPTURE).exists()
    state = root / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env["JACKIN_CTX_STATE_DIR"] = str(state)
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "supervise", "--role", "python-dev", "--",
                             "sleep", "600"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = state / "engine.sock"
    try:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        control_server.wait_ready(sock, 60)       # PING at once, then STATUS once the engine is warm
        world = World(root, real, sock, dirs)
        world.call("ctx-daemon", "{run} talk")       # the first run starts the daemon
        # ctx-run-compiled: the compiled capture where a daemon of its settings would have built it
        shutil.copy2(dirs["compiled"] / shims.CAPTURE, paths.daemon_capture(world.daemon("ctx-run-compiled")))
        control_server.wait_ready(world.daemon(), 60)
        yield world
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


@pytest.fixture(params=IMPLEMENTATIONS)
def impl(request):
    return request.param


def _raw(world: World, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(world.real / argv[0]), *argv[1:]], capture_output=True)


def test_every_exit_code_is_the_commands(world, impl):
    codes = range(256) if impl == "compiled" else SPREAD
    counted = impl in (*SOCKET_CLIENTS, "ctx-daemon")
    before = world.served(impl) if counted else 0
    got = world.call(impl, "for c in " + " ".join(map(str, codes)) + '; do {run} code $c; echo "rc=$?"; done')
    assert got.returncode == 0, got.stderr[-500:]
    assert got.stdout.decode() == "".join(f"exit {c}\nrc={c}\n" for c in codes)
    if counted:     # each went through the warm engine, not around it
        assert world.served(impl) == before + len(codes)


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT, signal.SIGKILL, signal.SIGSEGV, signal.SIGTERM])
def test_a_signal_that_kills_the_command_is_reported_as_128_plus_n(world, impl, sig):
    got = world.call(impl, f'{{run}} die {int(sig)}; echo "rc=$?"')
    assert got.stdout.decode() == f"before\nrc={128 + sig}\n", got.stderr[-500:]


def test_stdin_reaches_the_command(world, impl):
    got = world.call(impl, '{run} echoin; echo "rc=$?"', stdin=b"one\ntwo words\n\nlast\n")
    assert got.stdout == b"got one\ngot two words\ngot \ngot last\nrc=0\n", got.stderr[-500:]


def test_a_background_job_keeps_running_and_its_output_reaches_the_agent(world, impl):
    """The command returns at once (the shell's next line runs before the job's), the job's later
    output still reaches the agent, raw."""
    got = world.call(impl, '{run} serve; echo "rc=$?"')
    assert got.stdout == b"make: started the server\nrc=0\nserver: late line\n", (got.stdout, got.stderr[-500:])


def test_a_huge_line_passes_whole_or_recoverable(world, impl):
    raw = _raw(world, "wide")
    got = world.call(impl, '{run} wide; echo "rc=$?"', timeout=120)
    out, tail = got.stdout.rsplit(b"rc=", 1)
    assert tail == b"3\n" and got.stderr.endswith(b"exit 3 after a 3 MB line\n"), got.stderr[-500:]
    assert out == raw.stdout or (b"capsule ctx expand" in out and len(out) < len(raw.stdout)), out[:300]


@pytest.mark.parametrize("impl", SOCKET_CLIENTS)
def test_a_dead_supervisor_gives_raw_output_at_once(world, impl, tmp_path):
    dead = tmp_path / "dead.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(dead))
    s.close()                                    # the file stays; nobody listens: connect is refused
    t0 = time.monotonic()
    got = world.call(impl, "talk", sock=dead)
    took = time.monotonic() - t0
    raw = _raw(world, "talk")
    assert (got.returncode, got.stdout, got.stderr) == (5, raw.stdout, raw.stderr)
    assert took < shims.TIMEOUT_S, f"{took:.1f} s"


@pytest.mark.parametrize("impl", SOCKET_CLIENTS)
def test_a_hung_supervisor_gives_raw_output_after_the_deadline(world, impl, tmp_path):
    hung = tmp_path / "hung.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(hung))
    s.listen(8)                                  # connects succeed (the backlog); nothing is ever read
    try:
        t0 = time.monotonic()
        got = world.call(impl, "talk", sock=hung)
        took = time.monotonic() - t0
    finally:
        s.close()
    raw = _raw(world, "talk")
    assert (got.returncode, got.stdout, got.stderr) == (5, raw.stdout, raw.stderr)
    assert took < shims.TIMEOUT_S + 2.5, f"{took:.1f} s"


def _stale_socket(path: Path, listening: bool) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    if listening:
        s.listen(8)            # connects succeed (the backlog); nothing is ever read
    else:
        s.close()              # the file stays; nobody listens: connect is refused
    return s


def test_a_dead_daemon_means_the_in_process_engine_and_a_new_daemon(world, tmp_path):
    extra = {"JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "JACKIN_CTX_DAEMON_IDLE": "20"}
    (tmp_path / "state").mkdir(mode=0o700)
    dead = world.daemon(**extra)
    _stale_socket(dead, listening=False)
    t0 = time.monotonic()
    got = world.call("ctx-daemon", "{run} talk", **extra)
    took = time.monotonic() - t0
    alone = world.call("ctx-run", "{run} talk")
    raw = _raw(world, "talk")
    assert got.returncode == 5 and got.stdout == alone.stdout and len(got.stdout) < len(raw.stdout)
    assert got.stderr == raw.stderr
    assert took < shims.TIMEOUT_S + 10, f"{took:.1f} s"
    assert control_server.wait_ready(dead, 60) >= 0          # the next run's daemon replaced the dead socket
    again = world.call("ctx-daemon", "{run} talk", **extra)
    assert again.stdout == alone.stdout and control_server.status(dead)["served"] == 1


def test_a_hung_daemon_gives_raw_output_after_the_deadline(world, tmp_path):
    extra = {"JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "JACKIN_CTX_DAEMON_IDLE": "20"}
    (tmp_path / "state").mkdir(mode=0o700)
    hung_path = world.daemon(**extra)
    hung = _stale_socket(hung_path, listening=True)
    shutil.copy2(paths.daemon_capture(world.daemon()), paths.daemon_capture(hung_path))  # as its daemon built it
    lock = os.open(f"{hung_path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    import fcntl

    fcntl.flock(lock, fcntl.LOCK_EX)                  # as a daemon would: no other one starts
    try:
        t0 = time.monotonic()
        got = world.call("ctx-daemon", "{run} talk", **extra)
        took = time.monotonic() - t0
    finally:
        hung.close()
        os.close(lock)
    raw = _raw(world, "talk")
    assert (got.returncode, got.stdout, got.stderr) == (5, raw.stdout, raw.stderr)
    assert shims.TIMEOUT_S <= took < shims.TIMEOUT_S + 10, f"{took:.1f} s"


# The engine's state on a full volume: an 8 MiB tmpfs in a private mount namespace (root), the engine
# daemon started on it (it builds its capture there), then the volume filled, then the call.
FULL_VOLUME = r"""
set -e
mount -t tmpfs -o size=8m tmpfs "$VOL"
mkdir -m 700 "$JACKIN_CTX_STATE_DIR"
"$PY" -m capsule.supervisor.daemon &
daemon=$!
"$PY" -c "from capsule.supervisor import control_server as c; import sys; c.wait_ready(sys.argv[1], 60)" "$JACKIN_CTX_SOCKET"
head -c 16000000 /dev/urandom > "$VOL/filler" 2>/dev/null || true
# its warm-up rehearsal frees its scratch stores (on this volume) when it ends: fill that space too
for i in $(seq 600); do [ -z "$(ls -A "$JACKIN_CTX_STATE_DIR/warm-up/$daemon" 2>/dev/null)" ] && break; sleep 0.1; done
head -c 16000000 /dev/urandom > "$VOL/filler2" 2>/dev/null || true
set +e
"$@"
rc=$?
kill $daemon
exit $rc
"""


def test_an_engine_on_a_full_volume_gives_the_commands_own_bytes(world, impl):
    """Every capture, its engine's state volume full: the command's own bytes and exit status."""
    assert os.geteuid() == 0, "a tmpfs mount in a private namespace needs root (CI and the image run as root)"
    vol = Path(tempfile.mkdtemp(prefix="cf-"))      # short: a socket's path has ~107 bytes
    extra = {"JACKIN_CTX_STATE_DIR": str(vol / "state"), "JACKIN_CTX_DAEMON_IDLE": "120", "VOL": str(vol),
             "PY": sys.executable}
    sock = world.daemon(**extra)
    got = world.call(impl, '{run} talk', sock=sock, timeout=120, JACKIN_CTX_SOCKET=str(sock),
                     wrap=("unshare", "-m", "sh", "-c", FULL_VOLUME, "full-volume"), **extra)
    raw = _raw(world, "talk")
    assert (got.returncode, got.stdout) == (5, raw.stdout), got.stderr[-800:]
    assert got.stderr == raw.stderr, got.stderr[-800:]
    shutil.rmtree(vol)
