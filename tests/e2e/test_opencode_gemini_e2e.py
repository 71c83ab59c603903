"""Issue 30.2 "Done means", embedded: the session of tests/e2e/harness.py through the real OpenCode
(`opencode run`, its Anthropic provider at a fake Messages API) and the real Gemini CLI (`gemini
--yolo -p`, GOOGLE_GEMINI_BASE_URL at a fake streamGenerateContent API), plain vs `capsule up
--role python-dev --local --`.

In capsule mode every fact is in the tool results the model receives and those cost at most 55% of
plain mode's tokens; the read door is offered (session-scoped MCP); nothing is left in HOME or the
repository beyond what the client itself writes in plain mode; the usage capsule read from the
client's own session store (opencode.db, Gemini CLI's chats) equals what the fake reported. The two
clients' pairs run in parallel threads, once per module.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import apsw
import pytest

from capsule.measure import cost
from tests.e2e import harness
from tests.fakes.gemini import offered

CLIENTS = ("opencode", "gemini")
TARGET = 0.55
# What each client writes for itself in any session (plain mode too), and capsule's own state dir.
# OpenCode also installs its plugin SDK into its config dir (package.json, package-lock.json,
# node_modules) at startup, plain mode too; offline, how far that gets differs from run to run.
CLIENT_OWN = (".local/share/opencode", ".local/state/opencode", ".config/opencode/node_modules",
              ".config/opencode/package", ".config/opencode/bun.lock", ".cache", ".npm",
              ".gemini/tmp", ".gemini/history", ".local/state/capsule", ".pytest_cache")
# Compared by name: the fake's port (the test's own config) and the workspace path (Gemini CLI's
# project list) differ between the two sessions.
BY_NAME = (".config/opencode/opencode.json", ".gemini/settings.json", ".gemini/projects.json")


def _secure_root() -> Path:
    """Gemini CLI skips a system settings file below a group- or world-writable directory (/tmp is
    one): its sessions run under a directory whose every ancestor is the user's own."""
    base = Path(os.environ.get("CAPSULE_E2E_SECURE_TMP") or Path.home() / ".cache" / "capsule-e2e")
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(base, 0o700)
    return Path(tempfile.mkdtemp(prefix="gemini-", dir=base))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    roots = {"opencode": tmp_path_factory.mktemp("opencode"), "gemini": _secure_root()}
    try:
        with ThreadPoolExecutor(len(CLIENTS)) as pool:
            futures = {c: pool.submit(harness.run_pair, c, roots[c]) for c in CLIENTS}
            yield {c: f.result() for c, f in futures.items()}
    finally:
        shutil.rmtree(roots["gemini"], ignore_errors=True)


@pytest.mark.parametrize("client", CLIENTS)
def test_capsule_mode_shows_the_model_every_fact_at_most_55_percent_of_plain(runs, client):
    plain, cap = runs[client]
    assert len(cap.results) == len(plain.results) == len(harness.CALLS)
    table = harness.table([(plain, cap)])
    for i, call in enumerate(harness.CALLS):
        assert not cap.missing(i), f"{client} {call.name}: missing {cap.missing(i)}\n{table}\n{cap.results[i][:3000]}"
        assert cap.tokens()[i] <= plain.tokens()[i], f"{client} {call.name} grew\n{table}"
    ratio = sum(cap.tokens()) / sum(plain.tokens())
    assert ratio <= TARGET, f"{client}: {ratio:.2f} of plain\n{table}"


def _tools(s: harness.Session) -> set[str]:
    return set().union(*map(offered, s.requests)) if s.client == "gemini" else s.tool_names()


@pytest.mark.parametrize("client", CLIENTS)
def test_the_read_door_is_offered_for_the_session_only(runs, client):
    plain, cap = runs[client]
    door = {t for t in _tools(cap) if t.endswith("ctx_expand")}
    assert door and not door & _tools(plain), sorted(_tools(cap))


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if d != ".git"
                       and not any(os.path.normpath(os.path.join(rel_dir, d)).startswith(p) for p in CLIENT_OWN)]
        for name in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if any(rel.startswith(p) for p in CLIENT_OWN):
                continue
            out[rel] = "-" if rel in BY_NAME else hashlib.sha256((Path(dirpath) / name).read_bytes()).hexdigest()
    return out


@pytest.mark.parametrize("client", CLIENTS)
def test_nothing_is_left_in_home_or_the_repository(runs, client):
    """Both sessions start from the same fresh home and repository: every file the capsule
    session's leave outside the clients' own records is one the plain session's also hold."""
    plain, cap = runs[client]
    assert _snapshot(cap.home) == _snapshot(plain.home)
    assert _snapshot(cap.home.parent / "shop") == _snapshot(plain.home.parent / "shop")
    assert not list((cap.home / ".local/state/capsule/sessions").glob("[0-9]*"))   # the session dir went too


def _stored(cap: harness.Session, agent: str) -> dict:
    db = apsw.Connection(str(cap.home / ".local/state/capsule/usage.db"))
    row = db.execute("SELECT count(*), sum(input_tokens), sum(cache_read_input_tokens), sum(cache_creation_5m), "
                     "sum(output_tokens), count(cost_usd) FROM calls WHERE agent = ?", (agent,)).fetchone()
    return dict(zip(("calls", "input", "cache_read", "cache_write", "output", "priced"), row))


def test_opencode_usage_from_its_database_equals_what_the_fake_reported(runs):
    _, cap = runs["opencode"]
    agent_calls = [e["usage"] for e, body in zip(cap.fake.log, cap.fake.requests) if body.get("tools")]
    want = {"calls": len(agent_calls), "input": sum(u["input_tokens"] for u in agent_calls),
            "cache_read": sum(u["cache_read_input_tokens"] for u in agent_calls),
            "cache_write": sum(u["cache_creation_input_tokens"] for u in agent_calls),
            "output": sum(u["output_tokens"] for u in agent_calls)}
    got = _stored(cap, "opencode")
    assert {k: got[k] for k in want} == want
    assert got["priced"] == got["calls"]          # OpenCode's own cost for a model it prices


def test_gemini_usage_from_its_chats_equals_what_the_fake_reported(runs):
    _, cap = runs["gemini"]
    usage = [e["usage"] for e in cap.fake.log]    # the agent loop's calls (the router's side calls are not)
    want = {"calls": len(usage), "input": sum(u["promptTokenCount"] - u["cachedContentTokenCount"] for u in usage),
            "cache_read": sum(u["cachedContentTokenCount"] for u in usage), "cache_write": 0,
            "output": sum(u["candidatesTokenCount"] + u["thoughtsTokenCount"] for u in usage)}
    got = _stored(cap, "gemini")
    assert {k: got[k] for k in want} == want
    # The models Gemini CLI's router picked (gemini-3.1-pro-preview, its default, is priced in two prompt
    # bands) are unpriced, never guessed; a flat-priced one has its price.
    models = {m for (m,) in apsw.Connection(str(cap.home / ".local/state/capsule/usage.db")).execute(
        "SELECT DISTINCT model FROM calls WHERE agent = 'gemini'")}
    assert models and all(m.startswith("gemini-") and cost.price_for(m) is None for m in models), models
    assert cost.price_for("gemini-3.1-pro-preview") is None and cost.price_for("gemini-2.5-flash")["input"] == 0.3


def test_opencode_talks_to_its_model_through_the_proxy(runs):
    """The proxy door stands in for OpenCode's Anthropic provider (its baseURL in the session
    config), forwarding to the user's own baseURL, the fake."""
    _, cap = runs["opencode"]
    log = (cap.home / ".local/state/capsule/capsule.log").read_text()
    assert f"for opencode (upstream http://127.0.0.1:{cap.fake.port})" in log


def test_doctor_inside_the_session_names_the_client_its_version_and_live_doors(tmp_path):
    """`capsule ctx doctor` run by the agent itself: the client the supervisor launched (not the
    role's Claude Code), its version, its tested range, and which doors are live."""
    import json
    import sys

    ws = tmp_path / "shop"
    ws.mkdir()
    head = harness.build_workspace(ws)
    out = tmp_path / "doctor.json"
    call = harness.Call("doctor", f"{sys.executable} -m capsule ctx doctor --json > {out}", "Check capsule", ())
    harness.run_opencode(ws, tmp_path / "home", "capsule", head, (call,))
    agent = json.loads(out.read_text())["agent"]
    assert (agent["kind"], agent["title"], agent["version"]) == ("opencode", "OpenCode", "1.18.33")
    assert agent["version_warning"] is None and agent["tested"] == ["1.18.33", "1.18.33"]
    assert {d: v["live"] for d, v in agent["doors"].items()} == {"shims": True, "mcp": True, "proxy": True}
    assert agent["identity"] == "JACKIN_CTX_AGENT=opencode + JACKIN_CTX_TOOL"
