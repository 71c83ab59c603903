from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from capsule import shims
from capsule.supervisor import control_server

# The real tools the shims front: `talk` prints N lines to stdout, M to stderr, exits with CODE;
# `die` kills itself with a signal.
TALK = textwrap.dedent("""\
    #!/bin/sh
    n=${1:-3}; m=${2:-0}; code=${3:-0}
    i=1; while [ $i -le $n ]; do echo "out line $i of a long listing"; i=$((i+1)); done
    i=1; while [ $i -le $m ]; do echo "err line $i" >&2; i=$((i+1)); done
    exit $code
""")
DIE = "#!/bin/sh\necho before\nkill -$1 $$\n"
# `slow` says it is ready, then keeps running (a dev server, a long build) before more output.
SLOW = "#!/bin/sh\necho ready on port 8000\nsleep ${1:-3}\ni=1; while [ $i -le 3000 ]; do echo \"line $i\"; i=$((i+1)); done\nexit 3\n"
TOOLS = ["talk", "die", "slow"]


class Env:
    def __init__(self, root: Path, socket: Path, shim_dir: Path, real_dir: Path):
        self.root, self.socket, self.shim_dir, self.real_dir = root, socket, shim_dir, real_dir

    def env(self, **extra: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("JACKIN_CTX_", "CLAUDECODE", "CODEX_"))}
        base["PATH"] = f"{self.shim_dir}:{self.real_dir}:/usr/bin:/bin"
        base["JACKIN_CTX_SOCKET"] = str(self.socket)
        base.update(extra)
        return base

    def run(self, *argv: str, **extra: str) -> subprocess.CompletedProcess:
        """Run argv as an agent's tool call: a shell that sources capsule-env.sh first, as Claude
        Code (CLAUDE_ENV_FILE) and Codex (BASH_ENV) do, so the call's output is the agent's view."""
        return self.shell('exec "$@"', *argv, **extra)

    def shell(self, script: str, *args: str, cwd=None, stdin=subprocess.DEVNULL, **extra: str):
        env_file = self.shim_dir / shims.ENV_FILE
        return subprocess.run(["bash", "-c", f". {env_file}\n{script}", "agent-call", *args],
                              env=self.env(**extra), capture_output=True, timeout=60, cwd=cwd, stdin=stdin)

    def served(self) -> int:
        return control_server.status(self.socket)["served"]


@pytest.fixture(scope="module", params=["compiled", "python-only"])
def shimenv(tmp_path_factory, request):
    """Every shim test runs against the compiled shim (the default where a C compiler exists) and
    against the Python shim alone (the fallback without one): the same rules, exit codes, signals."""
    root = tmp_path_factory.mktemp("shims")
    real = root / "real"
    real.mkdir()
    for name, body in (("talk", TALK), ("die", DIE), ("slow", SLOW)):
        (real / name).write_text(body)
        (real / name).chmod(0o755)
    shim_dir = root / "shims"
    shims.install(shim_dir, names=TOOLS, compiled=request.param == "compiled")
    state = root / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env["JACKIN_CTX_STATE_DIR"] = str(state)
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "supervise", "--role", "python-dev", "--",
                             "sleep", "600"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket = state / "engine.sock"
    try:
        import time
        deadline = time.monotonic() + 30
        while not socket.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        control_server.wait_ready(socket, 60)     # PING at once, then STATUS once the engine is warm
        yield Env(root, socket, shim_dir, real)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
