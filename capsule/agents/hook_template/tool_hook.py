# capsule tool hook (written per session by capsule.agents.session; Claude Code runs it after each
# Read, Grep, Glob, WebFetch and MCP tool call). It hands the PostToolUse event to the supervisor's
# engine over its socket (`HOOK1 <len>` -> `OK <len>` + the answer | `RAW`), or, when no supervisor
# answers, to the embedded door (`python -m capsule.shims.hook_door`), and prints the answer:
# `updatedToolOutput` in the tool's own output shape. Small results and capsule's own tools never
# leave this process. Fails open: on any error it prints nothing, exits 0, the output stands.
import os
import socket
import subprocess
import sys

SOCKET = @SOCKET@
PYTHON = @PYTHON@
STATE_DIR = @STATE_DIR@
SOCKET_ENV = @SOCKET_ENV@
STATE_ENV = @STATE_ENV@
MIN_BYTES = 256
TIMEOUT_S = 20.0
EMBEDDED_TIMEOUT_S = 30.0


def ask_socket(path, payload):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(TIMEOUT_S)
        s.connect(path)
        s.sendall(b"HOOK1 %d\n" % len(payload) + payload)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    reply = b"".join(chunks)
    head, _, body = reply.partition(b"\n")
    fields = head.split()
    if len(fields) == 2 and fields[0] == b"OK" and int(fields[1]) == len(body):
        return body
    return b""


def main():
    payload = sys.stdin.buffer.read()
    if len(payload) < MIN_BYTES or b'"tool_name":"mcp__capsule__' in payload.replace(b" ", b""):
        return
    path = os.environ.get(SOCKET_ENV) or SOCKET
    try:
        out = ask_socket(path, payload)
    except OSError:     # no supervisor (or it went away): the engine in a process of its own
        env = dict(os.environ)
        env[STATE_ENV] = env.get(STATE_ENV) or STATE_DIR
        out = subprocess.run([PYTHON, "-m", "capsule.shims.hook_door"], input=payload, capture_output=True,
                             timeout=EMBEDDED_TIMEOUT_S, env=env).stdout
    if out:
        sys.stdout.buffer.write(out)


try:
    main()
except Exception:
    pass
