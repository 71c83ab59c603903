"""The proxy door speaking the Gemini API (Gemini CLI with GOOGLE_GEMINI_BASE_URL at /gemini).

`functionResponse` parts (`response.output`) of streamGenerateContent / generateContent bodies go
through the engine once per conversation, byte-stable on later turns; Gemini CLI's envelope around a
command's output is kept; usage comes from `usageMetadata`; everything else is forwarded as sent.
Upstream: the Gemini fake of tests/fakes/gemini.py (streams SSE as the real API does).
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx2
import pytest

from capsule.proxy import redirect, rewrite
from test_http import usage_rows
from tests.fakes.gemini import GenerateContentAPI, function_responses_in

KEY = "AIza-test-SECRET-0123456789abcdef"
STREAM = "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
USAGE = {"promptTokenCount": 1200, "cachedContentTokenCount": 200, "candidatesTokenCount": 30,
         "thoughtsTokenCount": 12, "totalTokenCount": 1242}


def _pytest_output() -> str:
    """Real pytest output, made now: 80 passing cases and one failure."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        tests = "\n".join(f"def test_case_{i:02d}():\n    assert {i} == {i}\n" for i in range(80))
        tests += "\ndef test_refund_half():\n    assert round(10.0 / 2 - 0.01, 2) == 5.0\n"
        (Path(d) / "test_shop.py").write_text(tests)
        out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_shop.py"],
                             cwd=d, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "test_refund_half FAILED" in out.stdout
    return out.stdout


OUTPUT = _pytest_output()


def _envelope(output: str, code: int = 1) -> str:
    """What Gemini CLI 0.61's run_shell_command hands the model."""
    return f"<untrusted_context>\nOutput: {output}\nExit Code: {code}\nProcess Group PGID: 4242\n</untrusted_context>"


def _body(*turns: tuple[str, str, dict, str], with_ids: bool = True) -> dict:
    """A Gemini CLI request: its session context, then (tool, call id, args, output) turns."""
    contents = [{"role": "user", "parts": [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]},
                {"role": "user", "parts": [{"text": "Investigate why checkout drops orders."}]}]
    for name, cid, args, output in turns:
        call = {"name": name, "args": args, **({"id": cid} if with_ids else {})}
        contents.append({"role": "model", "parts": [{"text": "Running the tests to see what fails."},
                                                    {"functionCall": call, "thoughtSignature": "skip"}]})
        contents.append({"role": "user", "parts": [{"functionResponse": {"name": name, "response": {"output": output},
                                                                          **({"id": cid} if with_ids else {})}}]})
    return {"contents": contents, "systemInstruction": {"parts": [{"text": "You are an agent."}]},
            "tools": [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "read_file"}]}],
            "generationConfig": {"temperature": 1, "topP": 0.95}}


SHELL = ("run_shell_command", "run_shell_command_1_0", {"command": "python -m pytest -v", "description": "run tests"},
         _envelope(OUTPUT))


# ---- the pure core ------------------------------------------------------------------------------
def test_function_responses_get_their_call_the_envelope_is_kept_and_the_engine_sees_the_output():
    seen = []

    def observe(call, text):
        seen.append((call, text))
        return "SHRUNK"

    body = _body(SHELL)
    out = rewrite.rewrite("gemini", body, lambda c, t: rewrite.engine_view(c, t, observe), shims_on=False)
    call, text = seen[0]
    assert (call.tool, call.command, call.exit_code, call.call_id) == \
        ("run_shell_command", "python -m pytest -v", 1, "run_shell_command_1_0")
    assert call.intent == "Running the tests to see what fails."
    assert text == OUTPUT            # no envelope, no status lines
    sent = function_responses_in(json.loads(out))[0]["response"]["output"]
    assert sent == "<untrusted_context>\nOutput: SHRUNK\nExit Code: 1\nProcess Group PGID: 4242\n</untrusted_context>"


def test_calls_without_ids_pair_by_name_in_order_and_the_memo_key_is_their_place():
    seen = []
    body = _body(("read_file", "", {"file_path": "/w/a.log"}, OUTPUT), ("read_file", "", {"file_path": "/w/b.log"}, OUTPUT),
                 with_ids=False)
    rewrite.rewrite("gemini", body, lambda c, t: seen.append(c) or "S", shims_on=True)
    assert [(c.path, c.call_id) for c in seen] == [("/w/a.log", "read_file#1"), ("/w/b.log", "read_file#2")]


def test_shell_results_belong_to_the_shims_when_they_are_on_and_capsule_output_is_never_shrunk_again():
    never = lambda c, t: (_ for _ in ()).throw(AssertionError("called"))  # noqa: E731
    assert rewrite.rewrite("gemini", _body(SHELL), never, shims_on=True) is None
    shrunk = _envelope(OUTPUT[:2000] + "\n[full output: capsule ctx expand <<ccr:0123456789abcdef01234567>>]")
    assert rewrite.rewrite("gemini", _body((*SHELL[:3], shrunk)), never, shims_on=False) is None
    assert rewrite.rewrite("gemini", _body(("mcp_capsule_ctx_read", "c1", {}, OUTPUT)), never, shims_on=False) is None


def test_only_the_model_methods_are_rewritten():
    assert rewrite.handles("gemini", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "rewrite")
    assert rewrite.handles("gemini", "/v1beta/models/gemini-2.5-pro:generateContent", "usage")
    assert rewrite.handles("gemini", "/v1beta/models/gemini-2.5-pro:countTokens", "rewrite")
    assert not rewrite.handles("gemini", "/v1beta/models/gemini-2.5-pro:countTokens", "usage")
    assert not rewrite.handles("gemini", "/v1beta/models", "rewrite")
    assert not rewrite.handles("gemini", "/v1beta/files/x:generateContent/../y", "rewrite")


# ---- over HTTP ----------------------------------------------------------------------------------
@pytest.fixture
def gemini():
    fake = GenerateContentAPI(usage=USAGE)
    yield fake
    fake.close()


def _compact(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _post(url: str, body, path: str = STREAM) -> httpx2.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(url + path, content=data, headers={"x-goog-api-key": KEY, "content-type": "application/json"},
                       timeout=60)


def test_a_conversation_is_shrunk_once_byte_stable_next_turn_rest_forwarded_and_usage_read(proxy_for, gemini,
                                                                                           state_dir):
    proxy = proxy_for(gemini_upstream=gemini.url)
    first = _body(SHELL)
    r = _post(proxy.url, _compact(first))     # as Gemini CLI writes it (JSON.stringify)
    assert r.status_code == 200 and b"usageMetadata" in r.content
    path, headers, raw1 = gemini.raw[0]
    assert path == STREAM.removeprefix("/gemini") and headers.get("x-goog-api-key") == KEY
    sent = json.loads(raw1)
    out1 = function_responses_in(sent)[0]["response"]["output"]
    assert "test_refund_half FAILED" in out1 and "assert 4.99 == 5.0" in out1 and "<<ccr:" in out1
    assert out1.startswith("<untrusted_context>\nOutput: ") and out1.endswith("Exit Code: 1\nProcess Group PGID: 4242\n</untrusted_context>")
    assert len(out1) < len(SHELL[3]) / 2
    # every other byte as the client sent it: only the output string differs
    assert raw1 == _compact(first).replace(_compact(SHELL[3]), _compact(out1))
    # the next turn: the first result goes out with the very same bytes, the new one is shrunk too
    second = _body(SHELL, ("run_shell_command", "run_shell_command_2_0", {"command": "pytest -v -x"}, _envelope(OUTPUT)))
    assert _post(proxy.url, second).status_code == 200
    outs = [fr["response"]["output"] for fr in function_responses_in(json.loads(gemini.raw[1][2]))]
    assert outs[0] == out1 and "<<ccr:" in outs[1]
    assert json.dumps(outs[0]).encode() in gemini.raw[1][2]
    # a standalone proxy records the upstream's own usage (Gemini CLI's chats are the source under `up`)
    rows = usage_rows(state_dir, at_least=2)
    assert [(r["agent"], r["model"], r["input_tokens"], r["cache_read_input_tokens"], r["output_tokens"])
            for r in rows] == [("gemini", "gemini-2.5-flash", 1000, 200, 42)] * 2


def test_a_body_with_nothing_to_shrink_is_forwarded_byte_exact(proxy_for, gemini):
    proxy = proxy_for(gemini_upstream=gemini.url)
    raw = json.dumps(_body(("run_shell_command", "c1", {"command": "ls"}, _envelope("a\nb"))), indent=3).encode()
    assert _post(proxy.url, raw).status_code == 200
    assert gemini.raw[0][2] == raw
    side = b'{"contents": [{"role": "user", "parts": [{"text": "route this"}]}]}'
    assert _post(proxy.url, side, "/gemini/v1beta/models/gemini-2.5-flash-lite:generateContent").status_code == 200
    assert gemini.side == [json.loads(side)]


def test_under_up_gemini_cli_chats_are_the_usage_source_so_the_proxy_records_none(proxy_for, gemini, state_dir):
    proxy = proxy_for(gemini_upstream=gemini.url, agent_kind="gemini")
    assert _post(proxy.url, _body(SHELL)).status_code == 200
    assert usage_rows(state_dir, at_least=1, wait_s=1.0) == []


def test_unreachable_upstream_answers_in_googles_error_shape(proxy_for):
    proxy = proxy_for(gemini_upstream="http://127.0.0.1:9")
    r = _post(proxy.url, _body(SHELL))
    assert r.status_code == 502 and r.json()["error"]["status"] == "UNAVAILABLE"


def test_gemini_cli_is_pointed_at_the_door_only_with_api_key_sign_in(tmp_path):
    env = {"HOME": str(tmp_path), "GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:7777"}
    r = redirect.redirect(redirect.upstream("gemini", env), "http://127.0.0.1:5000", "unused")
    assert r.upstream == "http://127.0.0.1:7777" and r.env == {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:5000/gemini"}
    assert redirect.upstream("gemini", {"HOME": str(tmp_path)}).skip
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "oauth-personal"}}}))
    assert "oauth-personal" in redirect.upstream("gemini", env).skip
    assert redirect.upstream("gemini", {**env, "GOOGLE_GENAI_USE_VERTEXAI": "true"}).skip
