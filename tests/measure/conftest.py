"""Real client runs shared by the measure tests (session-wide: each real client run takes seconds)."""

from __future__ import annotations

import json

import pytest

from tests.measure import clients
from tests.fakes.usage import DistinctMessages as FakeAnthropic, DistinctResponses as FakeResponses


@pytest.fixture(scope="session")
def claude_run(tmp_path_factory):
    """One real Claude Code session: first run, a resumed run, a fork, then /compact (module-wide:
    each client run takes seconds)."""
    root = tmp_path_factory.mktemp("claude")
    ws = root / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("hello\n")
    fake = FakeAnthropic(clients.claude_script(str(ws / "f.txt")))
    cfg = root / "cc"
    stages = {}
    try:
        first = clients.run_claude(fake, ws, cfg, "go")
        stages["first_result"] = first
        sid = first["session_id"]
        stages["first"] = list(fake.log)
        transcript = next((cfg / "projects").glob(f"*/{sid}.jsonl"))
        stages["first_transcript"] = transcript.read_bytes()
        clients.run_claude(fake, ws, cfg, "again please", "--resume", sid)
        stages["resumed"] = list(fake.log)
        forked = clients.run_claude(fake, ws, cfg, "again please", "--resume", sid, "--fork-session")
        stages["forked"] = list(fake.log)
        stages["fork_sid"] = forked["session_id"]
        compact = clients.run_claude(fake, ws, cfg, "/compact", "--resume", sid)
        stages["compacted"] = list(fake.log)
        stages["compact_result"] = compact
    finally:
        fake.close()
    return {"root": root, "cfg": cfg, "sid": sid, "transcript": transcript, **stages}


@pytest.fixture(scope="session")
def codex_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("codex")
    ws = root / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("hello\n")
    home = root / "codex-home"
    home.mkdir()
    fake = FakeResponses(clients.codex_script(), big=clients.codex_over_limit)
    (home / "config.toml").write_text("model_auto_compact_token_limit = 100000\n" + fake.provider_config())
    stages = {}
    try:
        clients.run_codex(fake, ws, home, "go")
        stages["first"] = list(fake.log)
        rollout = next((home / "sessions").rglob("rollout-*.jsonl"))
        stages["first_rollout"] = rollout.read_bytes()
        thread = json.loads(stages["first_rollout"].splitlines()[0])["payload"]["id"]
        clients.run_codex(fake, ws, home, "resume", thread, "again")
        stages["resumed"] = list(fake.log)
        clients.run_codex(fake, ws, home, "fork", thread, "forked")
        stages["forked"] = list(fake.log)
    finally:
        fake.close()
    return {"home": home, "rollout": rollout, "thread": thread, **stages}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A repo whose ls -la and git log --stat capsule shrinks (tests/measure/clients.make_workspace)."""
    return clients.make_workspace(tmp_path_factory.mktemp("inv1") / "ws")
