"""Container tests run against a real Docker engine and the capsule image built by scripts/setup-docker.sh.

Nothing here skips: when the engine or the image is missing, setup-docker.sh is run (it is
idempotent and fast when everything is current); if that fails, the tests fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # no image can be pulled here

import pytest  # noqa: E402
from testcontainers.core.container import DockerContainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("CAPSULE_IMAGE", "capsule:dev")
PY = "/opt/capsule/venv/bin/python"
SOCKET = "/state/context/engine.sock"
COMMITS = 150
EXEC_TIMEOUT_S = 120


@pytest.fixture(scope="session")
def image() -> str:
    proc = subprocess.run([str(ROOT / "scripts" / "setup-docker.sh")], capture_output=True, text=True,
                          env={**os.environ, "CAPSULE_IMAGE": IMAGE})
    assert proc.returncode == 0, f"scripts/setup-docker.sh failed:\n{proc.stderr[-3000:]}"
    return IMAGE


@pytest.fixture(scope="session")
def repo(tmp_path_factory) -> Path:
    """A git repository with enough history that `git log` is worth compressing (mounted read-only)."""
    root = tmp_path_factory.mktemp("repo")
    root.chmod(0o755)
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    # fast-import: one process for all commits
    stream = []
    for i in range(1, COMMITS + 1):
        msg = f"change {i}: adjust the widget pipeline and its tests".encode()
        data = f"{i}\n".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"committer Ada <ada@example.com> 1767225600 +0000\n")
        stream.append(b"data %d\n%s\n" % (len(msg), msg))
        stream.append(b"M 644 inline file.txt\ndata %d\n%s\n" % (len(data), data))
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=b"".join(stream), check=True, env=env)
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=True, env=env)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


class Capsule:
    """One running role container."""

    def __init__(self, container: DockerContainer):
        self.container = container
        self.raw = container.get_wrapped_container()

    def exec(self, cmd: list[str] | str, env: dict | None = None, workdir: str | None = None,
             user: str = "") -> tuple[int, bytes, bytes]:
        if isinstance(cmd, str):
            cmd = ["bash", "-c", cmd]
        cmd = ["timeout", "-s", "KILL", str(EXEC_TIMEOUT_S), *cmd]  # a hang fails the test, not CI
        res = self.raw.client.api.exec_create(self.raw.id, cmd, environment=env or {}, workdir=workdir, user=user)
        out, err = self.raw.client.api.exec_start(res["Id"], demux=True)
        code = self.raw.client.api.exec_inspect(res["Id"])["ExitCode"]
        return code, out or b"", err or b""

    def py(self, code: str) -> str:
        rc, out, err = self.exec([PY, "-c", code])
        assert rc == 0, err.decode()
        return out.decode()

    def ledger(self) -> list[list]:
        # Rows are written after the shim's reply (deferred; measure-only rows also count what
        # would have been emitted): a STATUS answers only once they are in (supervisor/control_server.py).
        if self.has_socket():
            self.status()
        return json.loads(self.py(
            "import apsw, json, os\n"
            "p = '/state/context/ledger.db'\n"
            "rows = apsw.Connection(p).execute('select command, applied, handle, exit_code, mode from emissions "
            "order by id').fetchall() if os.path.exists(p) else []\n"
            "print(json.dumps(rows))"))

    def wait_ready(self, timeout: float = 60.0) -> None:
        self.py(f"from capsule.supervisor.control_server import wait_ready; wait_ready({SOCKET!r}, {timeout})")

    def status(self) -> dict:
        return json.loads(self.py(f"import json; from capsule.supervisor import control_server; "
                                  f"print(json.dumps(control_server.status({SOCKET!r})))"))

    def has_socket(self) -> bool:
        return self.exec(["test", "-S", SOCKET])[0] == 0

    def wait_exit(self, timeout: float = 60.0) -> int:
        return self.raw.wait(timeout=timeout)["StatusCode"]

    def logs(self) -> str:
        return self.raw.logs().decode(errors="replace")


@pytest.fixture(scope="session")
def start(image, repo):
    started: list[DockerContainer] = []

    def _start(command: list[str] | None = None, env: dict | None = None, role: str | Path = "python-dev",
               ready: bool = True) -> Capsule:
        c = DockerContainer(image)
        c.with_volume_mapping(str(repo), "/repo", "ro")
        if isinstance(role, Path):
            c.with_volume_mapping(str(role), "/etc/capsule/role.toml", "ro")
            c.with_env("JACKIN_CTX_ROLE", "/etc/capsule/role.toml")
        else:
            c.with_env("JACKIN_CTX_ROLE", role)
        for k, v in (env or {}).items():
            c.with_env(k, v)
        if command:
            c.with_command(["--", *command])
        c.start()
        started.append(c)
        cap = Capsule(c)
        if ready:
            deadline = time.monotonic() + 60
            while True:
                state = cap.raw.client.api.inspect_container(cap.raw.id)["State"]
                if not state["Running"]:
                    raise AssertionError(f"container exited early: {cap.logs()}")
                if cap.exec(["test", "-e", "/state/context/capsule.log"])[0] == 0:
                    break
                assert time.monotonic() < deadline, cap.logs()
                time.sleep(0.1)
            if "JACKIN_CTX_DISABLE" not in (env or {}):
                cap.wait_ready()
        return cap

    yield _start
    for c in started:
        try:
            c.get_wrapped_container().remove(force=True, v=True)
        except Exception:  # noqa: BLE001 - already gone
            pass


@pytest.fixture(scope="session")
def network(image):
    """A docker network of our own: the fakes listen on its gateway, the containers join it."""
    name = f"capsule-e2e-{os.getpid()}"
    subprocess.run(["docker", "network", "create", name], check=True, capture_output=True)
    gateway = subprocess.run(["docker", "network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", name],
                             check=True, capture_output=True, text=True).stdout.strip()
    yield name, gateway
    subprocess.run(["docker", "network", "rm", name], capture_output=True)
