"""Issue 30.2, the proxy door for Gemini CLI: the real `gemini --yolo -p` under `capsule up --role
python-dev --local`, GOOGLE_GEMINI_BASE_URL (the user's, at a fake streamGenerateContent API)
replaced for the session by the proxy's /gemini door, which forwards only to that upstream.

The session mixes Gemini CLI's own file reads (`read_file`: only the proxy sees them) with shell
calls (`run_shell_command`: the shims own them). Checked: every fact reaches the model at most 55%
of plain mode's tokens; each read is shrunk by the proxy and each shell result by the shims, none
twice; every later request repeats the earlier results byte for byte (caches hold); usage from
Gemini CLI's chats equals the fake's, counted once although the proxy saw every response.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import apsw
import pytest

from tests.e2e import harness as h
from tests.fakes.gemini import function_responses_in, offered

TARGET = 0.55
FOOTER = "[full output: capsule ctx expand"
# (tool, args, facts): reads of the two order exports (only the proxy sees them), shell calls (the shims)
STEPS = (
    ("run_shell_command", {"command": "python -m pytest tests", "description": "Run the test suite"},
     (h.FAILING_TEST, h.FAILING_ASSERT)),
    ("read_file", {"file_path": "data/orders.json"}, (h.BAD_ID, h.BAD_ERROR)),
    ("read_file", {"file_path": "data/orders.jsonl"}, (h.BAD_ID, h.BAD_ERROR)),
    ("run_shell_command", {"command": "git log --stat -15", "description": "Show the last 15 commits"},
     (h.HEAD_SUBJECT,)),
)


class Mixed(h.FakeGeminiModel):
    """The next scripted call (any Gemini CLI tool) while fewer functionResponses than steps came back."""

    def answer(self, body: dict) -> list[dict]:
        done = len(function_responses_in(body))
        if done < len(STEPS) and "run_shell_command" in offered(body):
            name, args, _ = STEPS[done]
            if name == "read_file":
                args = {"file_path": str(Path(self.workspace) / args["file_path"])}
            return [{"functionCall": {"name": name, "args": args}}]
        return [{"text": "done"}]


def _run(root: Path, mode: str) -> dict:
    ws = root / mode / "shop"
    ws.mkdir(parents=True)
    h.build_workspace(ws)
    home = root / mode / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(h.GEMINI_SETTINGS))
    fake = type("Fake", (Mixed,), {"workspace": str(ws)})(calls=())
    try:
        env = {**h.base_env(home), "GEMINI_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{fake.port}",
               "SHELL": "/bin/bash"}
        argv = [h.client_path("gemini"), "--yolo", "-p", h.PROMPT]
        if mode == "capsule":
            argv = h.capsule_prefix() + argv
        proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=h.TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"gemini ({mode}) exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        return {"results": fake.tool_results(), "requests": list(fake.requests), "log": list(fake.log),
                "port": fake.port, "home": home}
    finally:
        fake.close()


@pytest.fixture(scope="module")
def runs():
    """Gemini CLI skips a system settings file below a group- or world-writable directory (/tmp):
    the sessions run under a directory whose every ancestor is the user's own."""
    base = Path(os.environ.get("CAPSULE_E2E_SECURE_TMP") or Path.home() / ".cache" / "capsule-e2e")
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    root = Path(tempfile.mkdtemp(prefix="gemini-proxy-", dir=base))
    try:
        with ThreadPoolExecutor(2) as pool:
            plain, cap = pool.map(lambda m: _run(root, m), ("plain", "capsule"))
        yield plain, cap
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _tokens(results: list[str]) -> list[int]:
    return [h.count(h._RUN_NOISE.sub("", r)) for r in results]


def test_every_fact_at_most_55_percent_of_plain_reads_by_the_proxy_shell_by_the_shims(runs):
    plain, cap = runs
    assert len(cap["results"]) == len(plain["results"]) == len(STEPS)
    tp, tc = _tokens(plain["results"]), _tokens(cap["results"])
    table = "\n".join(f"{s[0]:18} {s[1].get('file_path') or s[1]['command']:26} {p:>7} {c:>7}"
                      for s, p, c in zip(STEPS, tp, tc))
    for (name, _, facts), text, p, c in zip(STEPS, cap["results"], tp, tc):
        assert all(f in text for f in facts), f"{name}: missing {[f for f in facts if f not in text]}\n{table}"
        assert c < p, f"{name} was not shrunk\n{table}"
        assert text.count(FOOTER) == 1, f"{name}: shrunk {text.count(FOOTER)} times\n{text[-600:]}"
    assert sum(tc) / sum(tp) <= TARGET, f"{sum(tc)}/{sum(tp)} of plain\n{table}"
    log = (cap["home"] / ".local/state/capsule/capsule.log").read_text()
    assert f"for gemini (upstream http://127.0.0.1:{cap['port']})" in log


def test_the_proxy_shrank_the_reads_only_and_each_later_request_repeats_them_byte_for_byte(runs):
    _, cap = runs
    db = apsw.Connection(str(cap["home"] / ".local/state/capsule/proxy.db"))
    changed = db.execute("SELECT count(*) FROM memo WHERE output IS NOT NULL").fetchone()[0]
    assert changed == sum(1 for s in STEPS if s[0] == "read_file")
    loop = [b for b in cap["requests"] if function_responses_in(b)]
    for before, after in zip(loop, loop[1:]):
        a = [json.dumps(fr, sort_keys=True) for fr in function_responses_in(before)]
        b = [json.dumps(fr, sort_keys=True) for fr in function_responses_in(after)]
        assert b[:len(a)] == a


def test_usage_from_gemini_cli_chats_equals_the_fakes_and_is_counted_once(runs):
    _, cap = runs
    usage = [e["usage"] for e in cap["log"]]
    want = (len(usage), sum(u["promptTokenCount"] - u["cachedContentTokenCount"] for u in usage),
            sum(u["cachedContentTokenCount"] for u in usage),
            sum(u["candidatesTokenCount"] + u["thoughtsTokenCount"] for u in usage))
    db = apsw.Connection(str(cap["home"] / ".local/state/capsule/usage.db"))
    got = db.execute("SELECT count(*), sum(input_tokens), sum(cache_read_input_tokens), sum(output_tokens) "
                     "FROM calls WHERE agent = 'gemini'").fetchone()
    assert tuple(got) == want
