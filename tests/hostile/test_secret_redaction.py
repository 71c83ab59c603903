"""Secrets are redacted before anything is persisted (issue 24): an AWS secret and a PEM private key
in a command's output, a `Bearer ghp_…` token on a command line, a secret in a tool result the proxy
rewrites. The agent's view is unchanged; no file under the state dir holds the secret; `ctx expand`
returns what was stored and says redaction happened; JACKIN_CTX_NO_REDACT=1 stores verbatim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2

from capsule.proxy.app import Settings
from capsule.proxy.server import ProxyServer
from capsule.store.archive import Archive

AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n"
GHP = "ghp_R8xW2pLq9ZtY4vN6mK3sJ7dF1gH5aC0eB2uX"
OUTPUT = ("".join(f"-rw-r--r-- 1 dev dev {i * 37 % 9000:5d} Jan  1 10:00 file_{i}.txt\n" for i in range(1500))
          + f"export AWS_SECRET_ACCESS_KEY={AWS}\n-----BEGIN PRIVATE KEY-----\n{PEM_BODY}-----END PRIVATE KEY-----\n"
          + "".join(f"-rw-r--r-- 1 dev dev {i * 41 % 9000:5d} Jan  1 11:00 more_{i}.txt\n" for i in range(1500))).encode()
SECRETS = [AWS.encode(), PEM_BODY.split("\n")[0].encode(), PEM_BODY.split("\n")[1].encode(), GHP.encode()]


def _run(state, *args, input=None, env=None):
    full = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state), **(env or {})}
    full.pop("JACKIN_CTX_NO_REDACT", None) if not env or "JACKIN_CTX_NO_REDACT" not in env else None
    return subprocess.run([sys.executable, "-m", "capsule", *args], input=input, capture_output=True, env=full,
                          timeout=120)


def _holding(state, secrets) -> list[str]:
    """Files under state whose bytes hold any of the secrets (SQLite files, WAL, journals, caches)."""
    found = []
    for p in state.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            if data.startswith(b"SQLite format 3"):      # a long value spans overflow pages: ask SQLite too
                data += _db_values(p)
            found += [f"{p.name}: {s[:12]!r}" for s in secrets if s in data]
    return found


def _db_values(path) -> bytes:
    import apsw

    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
            for row in con.execute(f'SELECT * FROM "{table}"').fetchall():
                out += [v.encode() if isinstance(v, str) else bytes(v) for v in row if isinstance(v, (str, bytes))]
        return b"\n".join(out)
    finally:
        con.close()


def _handle(state) -> str:
    archive = Archive(state / "archive.db", readonly=True)
    try:
        (handle,) = [r[0] for r in archive.conn.execute("SELECT hash FROM ccr_entries")]
        return handle
    finally:
        archive.close()


def test_output_secrets_are_redacted_in_the_archive_not_in_the_agents_view(tmp_path):
    red, plain = tmp_path / "red", tmp_path / "plain"
    a = _run(red, "ctx", "pipe", "--cmd", "ls -l", input=OUTPUT)
    b = _run(plain, "ctx", "pipe", "--cmd", "ls -l", input=OUTPUT, env={"JACKIN_CTX_NO_REDACT": "1"})
    assert a.returncode == b.returncode == 0, a.stderr.decode()[-2000:]
    assert a.stdout == b.stdout                   # the agent's view does not depend on redaction
    assert b"<<ccr:" in a.stdout and len(a.stdout) < len(OUTPUT)
    assert _run(red, "ctx", "gain").returncode == 0     # the detached ledger writer has finished
    assert _holding(red, SECRETS) == []
    exp = _run(red, "ctx", "expand", _handle(red))
    assert exp.returncode == 0
    assert AWS.encode() not in exp.stdout and b"[capsule redacted: " in exp.stdout
    assert b"-----BEGIN PRIVATE KEY-----\n[capsule redacted: private-key]\n-----END PRIVATE KEY-----\n" in exp.stdout
    assert exp.stdout.replace(b"[capsule redacted: assignment]", AWS.encode()).replace(
        b"[capsule redacted: private-key]", PEM_BODY.rstrip("\n").encode()) == OUTPUT   # the rest byte-exact
    assert "2 secrets" in exp.stderr.decode() and "redacted" in exp.stderr.decode()
    # The switch: stored verbatim, expanded byte-exact, nothing said.
    exp = _run(plain, "ctx", "expand", _handle(plain), env={"JACKIN_CTX_NO_REDACT": "1"})
    assert exp.stdout == OUTPUT and b"redacted" not in exp.stderr
    assert _holding(plain, [AWS.encode()])


def test_a_token_on_a_command_line_is_not_kept_in_the_ledger_or_journal(tmp_path):
    state = tmp_path / "state"
    proc = _run(state, "ctx", "run", "--", "sh", "-c", f"echo 'Authorization: Bearer {GHP}' >/dev/null; seq 1 4000")
    assert proc.returncode == 0
    gain = _run(state, "ctx", "gain", "--emissions", "5")
    assert gain.returncode == 0, gain.stderr.decode()
    assert GHP not in gain.stdout.decode() and "[capsule redacted: " in gain.stdout.decode()
    assert _holding(state, [GHP.encode()]) == []


class _Upstream:
    def __init__(self):
        self.bodies: list[bytes] = []
        up = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                up.bodies.append(self.rfile.read(int(self.headers["content-length"])))
                body = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                   "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                                   "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_the_proxy_memo_keeps_no_secret_and_sends_the_same_bytes_after_a_restart(state_dir):
    log = "".join(f"2026-01-01 10:00:{i % 60:02d} INFO worker {i} step ok\n" for i in range(400))
    result = log + f"2026-01-01 10:07:00 ERROR auth failed for AWS_SECRET_ACCESS_KEY={AWS}\n" + log
    body = {"model": "claude-x", "metadata": {"user_id": json.dumps({"session_id": "s-red"})},
            "messages": [{"role": "user", "content": "read the log"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                            "input": {"file_path": "/w/app.log"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                       "content": result}]}]}
    up = _Upstream()
    try:
        for _ in range(2):          # the second proxy reads the first one's memo from proxy.db
            proxy = ProxyServer(Settings(state_dir=state_dir, anthropic_upstream=up.url)).start()
            try:
                assert httpx2.post(proxy.url + "/v1/messages", json=body, timeout=60).status_code == 200
            finally:
                proxy.stop()
    finally:
        up.close()
    first, second = up.bodies
    assert first == second
    sent = json.loads(first)["messages"][2]["content"][0]["content"]
    sent = sent if isinstance(sent, str) else sent[0]["text"]
    assert len(sent) < len(result) and AWS in sent          # rewritten, the error line (and its key) kept
    assert _holding(state_dir, [AWS.encode()]) == []


def test_ascii_text_is_redacted_exactly_as_the_same_text_beside_non_ascii():
    # ASCII text runs through RE2 as bytes encoded once; any other text through the str path.
    # Both must find the same secrets at the same places.
    from capsule.store import redact

    text = OUTPUT.decode() + f"token={GHP}\npassword = 'hunter2-{AWS}'\n"
    ascii_out, n = redact.redact_text(text)
    wide_out, m = redact.redact_text(text + "é")
    assert n >= 3 and m == n
    assert wide_out == ascii_out + "é"
    assert not any(s.decode() in ascii_out for s in (AWS.encode(), GHP.encode()))
