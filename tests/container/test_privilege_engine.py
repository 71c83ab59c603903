"""Issue 31 on the real Docker engine: who the agent runs as, and what it can leave on the host.

Why a root-owned workspace is refused rather than mounted `nosuid`: the engine takes no `nosuid` for a
bind mount (`-v …:nosuid` and `--mount …,nosuid` are errors), a local-driver bind volume with
`o=bind,nosuid` drops the flag, and root in the container then leaves a setuid-root file that is
setuid-root on the host path. The agent as the workspace owner can only make files its owner owns.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import uuid

CLI = [sys.executable, "-m", "capsule"]


def _ws(tmp_path, uid: int):
    ws = tmp_path / f"ws-{uid}"
    ws.mkdir()
    os.chown(ws, uid, uid)
    return ws


def _role(tmp_path, env: str = "") -> str:
    name = f"priv-{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.toml"
    path.write_text(f'schema = 1\nname = "{name}"\n[agent]\nkind = "shell"\n{env}\n')
    path.chmod(0o644)
    return str(path)


def _up(image, *args, timeout=180):
    return subprocess.run([*CLI, "up", "--image", image, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_the_engine_cannot_mount_a_workspace_nosuid_so_root_could_leave_a_setuid_file(image, tmp_path):
    ws = _ws(tmp_path, 0)
    for flag in (["-v", f"{ws}:/w:nosuid"], ["--mount", f"type=bind,src={ws},dst=/w,nosuid"]):
        got = subprocess.run(["docker", "run", "--rm", *flag, "--entrypoint", "true", image], capture_output=True,
                             text=True, timeout=120)
        assert got.returncode != 0, flag                            # no such option for a bind mount
    vol = f"capsule-priv-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "volume", "create", "--driver", "local", "--opt", "type=none", "--opt", f"device={ws}",
                    "--opt", "o=bind,nosuid", vol], check=True, capture_output=True, timeout=60)
    try:
        got = subprocess.run(["docker", "run", "--rm", "--user", "0:0", "-v", f"{vol}:/w", "--entrypoint", "sh", image,
                              "-c", "cp /bin/true /w/t && chmod 4755 /w/t"], capture_output=True, text=True,
                             timeout=120)
        assert got.returncode == 0, got.stderr
        st = os.stat(ws / "t")
        assert st.st_uid == 0 and st.st_mode & stat.S_ISUID          # setuid-root on the host: why root is refused
    finally:
        subprocess.run(["docker", "volume", "rm", "-f", vol], capture_output=True, timeout=60)


def test_up_refuses_root_from_a_root_owned_workspace_and_from_a_role_file(image, tmp_path):
    root_ws = _ws(tmp_path, 0)
    got = _up(image, "--role", _role(tmp_path), "--workspace", str(root_ws), "--network", "none", "--", "id", "-u")
    assert got.returncode == 2 and "owned by root" in got.stderr and "--user UID:GID" in got.stderr, got.stderr
    evil = _role(tmp_path, '[agent.env]\nJACKIN_CTX_RUN_AS = "0:0"')
    got = _up(image, "--role", evil, "--workspace", str(_ws(tmp_path, 1000)), "--network", "none", "--", "id", "-u")
    assert got.returncode == 2 and "JACKIN_CTX_RUN_AS" in got.stderr and "line" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr


def test_the_agent_is_the_owner_its_setuid_file_is_the_owners_and_loader_env_skips_pid_1(image, tmp_path):
    ws = _ws(tmp_path, 1000)
    role = _role(tmp_path, '[agent.env]\nPYTHONPATH = "/workspace/lib"')
    name = f"capsule-priv-{uuid.uuid4().hex[:8]}"
    try:
        got = _up(image, "--role", role, "--workspace", str(ws), "--network", "none", "--name", name, "--",
                  "sh", "-c", "id -u; echo \"pp=$PYTHONPATH\"; cp /bin/true /workspace/t && chmod 4755 /workspace/t; "
                  "tr '\\0' '\\n' </proc/1/environ | grep -c '^PYTHONPATH=' || true")
    finally:
        subprocess.run([*CLI, "down", name, "--volumes"], capture_output=True, timeout=120)
    assert got.returncode == 0, got.stderr
    out = got.stdout.split()
    assert out[0] == "1000" and "pp=/workspace/lib" in out, got.stdout    # the agent gets its role's env
    assert out[-1] == "0", got.stdout                                       # PID 1 (root at start) never did
    st = os.stat(ws / "t")
    assert st.st_uid == 1000 and st.st_uid != 0                             # setuid to its owner only


def test_the_supervisor_refuses_run_as_root_over_a_workspace_another_uid_owns(image, tmp_path):
    """A hand-written compose file or `docker run -e JACKIN_CTX_RUN_AS=0:0`: capsule up never sends it."""
    ws = _ws(tmp_path, 1000)
    got = subprocess.run(["docker", "run", "--rm", "--network", "none", "--user", "0:0", "-v", f"{ws}:/workspace",
                          "-e", "JACKIN_CTX_RUN_AS=0:0", "-e", "JACKIN_CTX_ROLE=default", image, "--", "id", "-u"],
                         capture_output=True, text=True, timeout=180)
    assert got.returncode == 2, (got.stdout, got.stderr)
    assert "refusing to run the agent as root" in got.stderr and got.stdout == ""
