"""A trusted project filter applies to shimmed commands run in that project, whatever the
supervisor's own working directory (the shim sends its cwd over the control socket)."""

from __future__ import annotations

import os
import subprocess
import sys

from capsule.engine import Engine
from capsule.shims import door

FILTER = '''schema = 1
[filters.acme_deploy]
description = "acme deploy: upload chatter dropped"
match = ['^acme-deploy\\b']
strip_lines = ['^uploading ']

[[filters.acme_deploy.tests]]
name = "uploads dropped"
input = """
uploading a.tar
deployed v2
"""
expected = """
deployed v2
"""
'''


def _project(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".capsule").mkdir(parents=True)
    (proj / ".capsule" / "filters.toml").write_text(FILTER)
    return proj


def _output() -> bytes:
    return "".join(f"uploading chunk-{i}.tar\n" for i in range(200)).encode() + b"deployed v7\n"


def test_engine_reads_the_project_filter_from_the_command_cwd(state_dir, tmp_path):
    proj = _project(tmp_path)
    r = subprocess.run([sys.executable, "-m", "capsule", "ctx", "trust", str(proj / ".capsule" / "filters.toml")],
                       capture_output=True, env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)})
    assert r.returncode == 0, r.stderr
    engine = Engine(state_dir)
    elsewhere = door.observe_command(engine, "acme-deploy prod", _output(), b"", 0, 5.0, "s1", cwd=str(tmp_path))
    inside = door.observe_command(engine, "acme-deploy prod", _output(), b"", 0, 5.0, "s1", cwd=str(proj))
    assert b"uploading chunk-5.tar" not in inside[0] and b"deployed v7" in inside[0]
    assert b"uploading chunk-5.tar" in elsewhere[0] or len(elsewhere[0]) > len(inside[0])
    rows = engine.ledger.rows()
    assert rows[-1]["transform"] == "filter"


def test_socket_request_carries_cwd(state_dir, tmp_path):
    import anyio

    from capsule.supervisor.control_server import EngineServer, request

    proj = _project(tmp_path)
    subprocess.run([sys.executable, "-m", "capsule", "ctx", "trust", str(proj / ".capsule" / "filters.toml")],
                   check=True, capture_output=True, env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)})
    sock = tmp_path / "engine.sock"
    out = _output()
    cmd, scope, cwd = b"acme-deploy prod", b"s1", str(proj).encode()
    payload = b"OBS1 0 1000 %d %d 0 %d %d\n" % (len(cmd), len(out), len(scope), len(cwd)) + cmd + out + scope + cwd

    async def main():
        server = EngineServer(sock, Engine(state_dir))
        await server.listen()
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            reply = await anyio.to_thread.run_sync(request, sock, payload, 10)
            tg.cancel_scope.cancel()
        return reply

    reply = anyio.run(main)
    assert reply.startswith(b"OK ")
    assert b"uploading chunk-5.tar" not in reply and b"deployed v7" in reply
