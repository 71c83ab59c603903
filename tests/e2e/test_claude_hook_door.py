"""The hook door in the real Claude Code (issue 30.3): under `capsule up --role python-dev --local`,
a native Read of a large data file and a wide Grep come back shrunk through the session's
PostToolUse hook with the proxy off (every fact kept, the original archived, one ledger row each);
with the proxy on too, the same results are shrunk once, never twice.
"""

from __future__ import annotations

import json
import subprocess
import sys

import apsw
import pytest

from tests.e2e import harness as h


def _calls(ws):
    return [("Read", {"file_path": str(ws / "data" / "orders.jsonl")}),
            # wide: every hit (head_limit 0; the client's default keeps 250 of ripgrep's unordered lines,
            # which may drop the decisive one before any hook sees it)
            ("Grep", {"pattern": "TODO", "path": str(ws / "src"), "output_mode": "content", "-n": True,
                      "head_limit": 0})]


READ_FACTS = (h.BAD_ID, h.BAD_ERROR)
GREP_FACTS = (h.DECISIVE.split(":", 2)[2].strip(),)


def _rows(home):
    ledger = apsw.Connection(str(home / ".local/state/capsule/ledger.db"))
    return ledger.execute("SELECT command, handle, raw_tokens, emitted_tokens FROM emissions").fetchall()


def _session(tmp_path, name, mode, extra_env=None, claude=None):
    ws = tmp_path / name / "shop"
    ws.mkdir(parents=True)
    h.build_workspace(ws)
    session, fake = h.run_claude_tools(ws, tmp_path / name / "home", mode, _calls(ws), extra_env, claude=claude)
    return ws, session, fake


@pytest.mark.parametrize("release", ["oldest", "newest"])
def test_native_read_and_grep_are_shrunk_by_the_hook_with_the_proxy_off(tmp_path, release):
    claude = h.tested_client("claude", release)
    _, plain, _ = _session(tmp_path, "plain", "plain", claude=claude)
    ws, cap, _ = _session(tmp_path, "hook", "capsule", {"JACKIN_CTX_NO_PROXY": "1"}, claude=claude)
    read, grep = cap.results
    assert all(f in plain.results[1] for f in GREP_FACTS) and len(plain.results[1].splitlines()) >= 301
    for fact in READ_FACTS:
        assert fact in read, read[:3000]
    for fact in GREP_FACTS:
        assert fact in grep, grep[:3000]
    for got, raw in zip(cap.tokens(), plain.tokens()):
        assert got < raw * 0.55, (cap.tokens(), plain.tokens())
    rows = _rows(cap.home)
    commands = [r[0] for r in rows]
    assert commands.count(f"cat {ws / 'data' / 'orders.jsonl'}") == 1, rows
    # the Grep as a command, its flags included (agents/claude.grep_command: `rg -n … TODO …`)
    assert sum(c.startswith("rg ") and " TODO" in c for c in commands) == 1, rows
    # the original is one `ctx expand` away, byte for byte
    handle = next(r[1] for r in rows if r[0].startswith("cat "))
    env = {**h.base_env(cap.home)}
    got = subprocess.run([sys.executable, "-m", "capsule", "ctx", "expand", handle], env=env, capture_output=True,
                         check=True).stdout
    assert got == (ws / "data" / "orders.jsonl").read_bytes()


def test_with_the_proxy_on_too_each_result_is_shrunk_once(tmp_path):
    ws, cap, fake = _session(tmp_path, "both", "capsule")
    read, grep = cap.results
    assert read.count("<<ccr:") == 1 and grep.count("<<ccr:") == 1, (read[-400:], grep[-400:])
    for fact in READ_FACTS:
        assert fact in read
    rows = _rows(cap.home)
    assert len([r for r in rows if r[0].startswith(("cat ", "rg "))]) == 2, rows
    # every request the model got carries the hook's bytes, unchanged by the proxy
    for body in fake.requests[1:]:
        texts = [h.result_text(r) for r in h.tool_results_in(body)]
        assert texts == cap.results[:len(texts)]


def test_a_model_switch_the_user_makes_reaches_the_route_audit_with_the_clients_estimate(tmp_path):
    """Claude Code 2.1.332's PreModelSwitch / PostModelSwitch (a `set_model` on its stream-json
    control channel, as an SDK host or /model sends it): a boundary when asked, a change row with the
    cache write the client itself estimated, and the route report's audit lists it as the user's."""
    import time

    from tests.fakes.anthropic import MessagesAPI

    from capsule.route import route_report
    from capsule.store import route_rows

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    fake = MessagesAPI()
    try:
        env = {**h.base_env(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}", "ANTHROPIC_API_KEY": "test",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "JACKIN_CTX_NO_PROXY": "1"}
        # the switch hooks are the newest release's (2.1.332; not in 2.1.197)
        argv = h.capsule_prefix() + [h.tested_client("claude", "newest"), "-p", "--input-format", "stream-json",
                                     "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5"]
        proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

        def send(msg):
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()

        def until(kind):
            deadline = time.monotonic() + h.TIMEOUT_S
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                assert line, f"claude ended before a {kind}: {proc.stderr.read()[-3000:]}"
                if json.loads(line).get("type") == kind:
                    return
            raise AssertionError(f"no {kind} within {h.TIMEOUT_S}s")

        send({"type": "user", "message": {"role": "user", "content": "hello"}})
        until("result")
        send({"type": "control_request", "request_id": "r1",
              "request": {"subtype": "set_model", "model": "claude-opus-4-8"}})
        until("control_response")
        send({"type": "user", "message": {"role": "user", "content": "again"}})
        until("result")
        proc.stdin.close()
        assert proc.wait(h.TIMEOUT_S) == 0, proc.stderr.read()[-3000:]
    finally:
        fake.close()
    assert [b["model"] for b in fake.requests] == ["claude-sonnet-4-5", "claude-opus-4-8", "claude-opus-4-8"][:len(fake.requests)]
    rows = route_rows.read(home / ".local/state/capsule/ledger.db")
    asked = [r for r in rows if r["kind"] == "boundary" and r["reason"] == "model switch requested (sdk)"]
    done = [r for r in rows if r["kind"] == "change"]
    assert len(asked) == 1 and len(done) == 1, rows
    assert done[0]["source"] == route_rows.CLIENT_HOOK
    detail = done[0]["detail"]
    assert (detail["from_model"], detail["to_model"]) == ("claude-sonnet-4-5", "claude-opus-4-8")
    assert detail["prompt_cache_warm"] is True and detail["context_tokens"] == 15     # the fake's 10 in + 5 out
    assert detail["estimated_cache_write_usd"] > 0
    audit = route_report.analyse([], rows, [])["audit"]
    assert audit["capsule_changes"] == 0 and audit["user_changes"] == 0      # INV-9: none of capsule's
    assert [(s["from_model"], s["to_model"]) for s in audit["client_switches"]] == [("claude-sonnet-4-5", "claude-opus-4-8")]
