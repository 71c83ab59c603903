"""Secrets are redacted before anything is persisted (issue 24): an AWS secret and a PEM private key
in a command's output, a `Bearer ghp_…` token on a command line, a secret in a tool result the proxy
rewrites. The agent's view is unchanged; no file under the state dir holds the secret; `ctx expand`
returns what was stored and says redaction happened; JACKIN_CTX_NO_REDACT=1 stores verbatim."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx2

from capsule.proxy.app import Settings
from capsule.proxy.proxy_server import ProxyServer
from tests.fakes.http import Canned
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
    con.setbusytimeout(10_000)     # an engine may be creating its stores right now (a cold run's own engine)
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


_ANSWER = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                      "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                      "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()


def _Upstream() -> Canned:  # noqa: N802
    return Canned(200, [("content-type", "application/json")], [_ANSWER])


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


def test_a_token_format_is_redacted_whole_not_only_its_prefix_group():
    # detect-secrets' gitlab pattern is `(glpat|gldt|...)-[A-Za-z0-9_-]{20,50}(?!\w)`: its group is
    # the prefix. Only a keyword pattern's groups are its value.
    from capsule.store import redact

    body = "abcdefghijklmnopqrstuvwxyz012"
    for token in (f"glpat-{body}", f"glcbt-ab_{body}"):
        out, n = redact.redact_text(f"x {token} y\n")
        assert n == 1 and body not in out and out == "x [capsule redacted: gitlab-token] y\n", out
    out, n = redact.redact_text('ibm_cloud_iam_key = "' + "a" * 44 + '"\n')
    assert out == 'ibm_cloud_iam_key = "[capsule redacted: ibm-cloud-iam-key]"\n'


def test_the_patterns_re_scans_are_sieved_by_re2_without_losing_a_match():
    from capsule.store import redact

    assert redact.without_lookarounds(r"(?:(?<=\W)|(?<=^))a(?!\w)[(?=\]]b(?<!c(d))e") == r"(?:|)a[(?=\]]be"
    # The keyword patterns RE2 cannot take (lookbehinds) get a sieve (RE2 refuses two patterns even
    # without lookarounds: putty's 200 repeats of a group, glagent's {50,1024}); each still finds its secret.
    whole, by_line, _ = redact.patterns()
    fallbacks = [p for p in whole + by_line if p._re2 is None]
    assert len(fallbacks) >= 10 and sum(p._sieve is None for p in fallbacks) <= 2
    assert all(p._sieve is not None for p in by_line if p._re2 is None)
    samples = {
        "cloudant-credentials": "cloudant_password = '" + "ab" * 32 + "'",
        "ibm-cos-hmac-credentials": "cos_hmac_secret_access_key = " + "ab" * 24,
        "softlayer-credentials": "softlayer_api_key: " + "a1" * 32,
        "gitlab-token": "glptt-" + "x" * 40,
    }
    noise = "".join(f"{i:08x}QWxhZGRpbjpvcGVuIHNlc2FtZQ" for i in range(3000))
    texts = [f"{noise}\n{line}\n{noise}\n" for line in samples.values()] + [noise]
    hits = 0
    for p in (p for p in fallbacks if p._sieve is not None):
        for text in texts:
            sieved: list = []
            redact._matches(sieved, p, 0, text, text.encode("ascii"))
            sieve, p._sieve = p._sieve, None
            try:
                scanned: list = []
                redact._matches(scanned, p, 0, text, text.encode("ascii"))
            finally:
                p._sieve = sieve
            assert sieved == scanned, p.kind
            hits += bool(scanned)
    assert hits >= len(samples)
