"""Done means (issue 12): `ctx usage --json` totals equal the fake API's own log exactly, for every
call the real client writes down; re-ingesting changes nothing; appended messages add exactly theirs.

Real Claude Code 2.1.197 and Codex 0.171 against tests/fakes/usage.py (distinct usage per
call, multi-block responses, parallel tool calls, a subagent, resume, fork, /compact, auto-compaction).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


from tests.fakes.usage import DistinctMessages as FakeAnthropic, DistinctResponses as FakeResponses

KEYS = ("calls", "input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h", "output_tokens")


def usage(capsule, *args) -> dict:
    proc = capsule("ctx", "usage", "--json", *args)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def pick(d: dict) -> dict:
    return {k: d[k] for k in KEYS}


def totals_of(log: list[dict], fake_cls) -> dict:
    class View:
        pass
    v = View()
    v.log = log
    return fake_cls.totals(v)


def test_claude_code_totals_equal_the_fake_log(claude_run, capsule, tmp_path):
    # The first run alone, from a copy of its transcript folder as it was after the first run.
    cfg = tmp_path / "cc"
    shutil.copytree(claude_run["cfg"], cfg)
    path = next((cfg / "projects").glob(f"*/{claude_run['sid']}.jsonl"))
    path.write_bytes(claude_run["first_transcript"])
    for other in (cfg / "projects").glob("*/*.jsonl"):
        if other != path:
            other.unlink()
    first = claude_run["first"]
    assert [e["blocks"] for e in first][0] == ["thinking", "text", "tool_use", "tool_use"]
    got = usage(capsule, "--claude-dir", str(cfg))
    assert pick(got["totals"]) == totals_of(first, FakeAnthropic)
    assert len(got["sessions"]) == 1 and got["sessions"][0]["session_id"] == claude_run["sid"]
    assert got["sessions"][0]["threads"] == 1          # the subagent's calls, in its parent's session
    # Re-ingesting the same bytes changes nothing.
    assert pick(usage(capsule, "--claude-dir", str(cfg))["totals"]) == totals_of(first, FakeAnthropic)
    # Appending the resumed run's lines adds exactly the resumed calls; a half-written line waits.
    full = claude_run["transcript"].read_bytes()
    resumed_part = full[len(claude_run["first_transcript"]):]
    assert full.startswith(claude_run["first_transcript"]) and resumed_part
    cut = resumed_part.index(b"\n", len(resumed_part) // 2) + 40
    with open(path, "ab") as f:
        f.write(resumed_part[:cut])
    partial = usage(capsule, "--claude-dir", str(cfg))["totals"]
    assert partial["calls"] <= len(claude_run["resumed"])
    with open(path, "ab") as f:
        f.write(resumed_part[cut:])
    # The whole file now (first run, resumed run, the /compact run's entries): exactly the calls
    # whose ids it records, each once.
    got = usage(capsule, "--claude-dir", str(cfg))["totals"]
    recorded = _ids_in(cfg)
    assert pick(got) == totals_of([e for e in claude_run["compacted"] if e["id"] in recorded], FakeAnthropic)
    assert got["calls"] == len(recorded) > len(first)


def _ids_in(cfg: Path) -> set[str]:
    ids = set()
    for p in (cfg / "projects").rglob("*.jsonl"):
        for ln in p.read_bytes().splitlines():
            d = json.loads(ln)
            m = d.get("message")
            if d.get("type") == "assistant" and isinstance(m, dict) and str(m.get("id", "")).startswith("msg_"):
                ids.add(m["id"])
    return ids


def test_claude_code_whole_folder_fork_and_compact(claude_run, capsule):
    got = usage(capsule, "--claude-dir", str(claude_run["cfg"]))
    log = claude_run["compacted"]
    recorded = _ids_in(claude_run["cfg"])
    unrecorded = [e for e in log if e["id"] not in recorded]
    # The one call Claude Code never writes down: /compact's summary request (USAGE-FORMATS trap 6).
    compact_calls = log[len(claude_run["forked"]):]
    assert unrecorded == [e for e in compact_calls if e["id"] not in recorded]
    # (2.1.332 asks once more, a stricter instruction, when the answer had no <summary> block, as the
    # fake's has not: that retry is a summary request too, also never written down)
    assert 1 <= len(unrecorded) <= 2, unrecorded
    assert all("Bash" not in json.dumps(e["blocks"]) for e in unrecorded)
    assert pick(got["totals"]) == totals_of([e for e in log if e["id"] in recorded], FakeAnthropic)
    # The fork copied the original's calls: they stay in the original session, counted once; the
    # fork's own new call is the fork's.
    by_sid = {s["session_id"]: s for s in got["sessions"]}
    assert set(by_sid) == {claude_run["sid"], claude_run["fork_sid"]}
    assert by_sid[claude_run["fork_sid"]]["calls"] == len(claude_run["forked"]) - len(claude_run["resumed"])


def test_codex_totals_equal_the_fake_log(codex_run, capsule, tmp_path):
    log = codex_run["forked"]
    assert any(e["compact"] for e in log), "auto-compaction did not run"
    got = usage(capsule, "--codex-dir", str(codex_run["home"]))
    assert pick(got["totals"]) == totals_of(log, FakeResponses)       # every call, compaction included
    assert pick(usage(capsule, "--codex-dir", str(codex_run["home"]))["totals"]) == totals_of(log, FakeResponses)
    sessions = {s["session_id"]: s for s in got["sessions"]}
    assert sessions[codex_run["thread"]]["calls"] == len(codex_run["resumed"])
    assert len(sessions) == 2                                          # the fork is its own session


def test_codex_appended_lines_add_exactly_their_calls(codex_run, capsule, tmp_path):
    home = tmp_path / "codex-home" / "sessions"
    home.mkdir(parents=True)
    path = home / codex_run["rollout"].name
    first = codex_run["first_rollout"]
    path.write_bytes(first)
    assert pick(usage(capsule, "--codex-dir", str(home))["totals"]) == totals_of(codex_run["first"], FakeResponses)
    full = codex_run["rollout"].read_bytes()
    rest = full[len(first):]
    half = len(rest) // 2
    with open(path, "ab") as f:
        f.write(rest[:half])
    usage(capsule, "--codex-dir", str(home))
    with open(path, "ab") as f:
        f.write(rest[half:])
    got = usage(capsule, "--codex-dir", str(home))["totals"]
    assert pick(got) == totals_of(codex_run["resumed"], FakeResponses)


def test_codex_subagent_calls_join_the_parent_session(capsule, tmp_path):
    """`spawn_agent` (multi_agent_v2): the subagent's own rollout names the parent's session; its calls
    count once each, in the parent's session, as a thread of it (USAGE-FORMATS Codex trap 4)."""
    import json as _json

    from tests.measure import clients

    def fc(i, name, args, ns=None):
        item = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": name,
                "arguments": _json.dumps(args), "status": "completed"}
        return {**item, "namespace": ns} if ns else item

    def msg(text):
        return {"type": "message", "role": "assistant", "id": "m",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    def script(body, done):
        sub = any(i.get("type") == "agent_message" and "SUBMARK" in _json.dumps(i) for i in body.get("input", []))
        if sub:
            return [fc(100, "exec_command", {"cmd": "echo sub"})] if done == 0 else [msg("sub done")]
        if done == 0:
            return [fc(0, "spawn_agent", {"task_name": "sub_task", "message": "SUBMARK say hi",
                                          "fork_turns": "none"}, "collaboration")]
        if done == 1:   # wait for the subagent's final status, so its calls happen before exec ends
            return [fc(1, "wait_agent", {"timeout_ms": 20000}, "collaboration")]
        return [msg("done")]

    fake = FakeResponses(script)
    home = tmp_path / "codex-home"
    home.mkdir()
    (tmp_path / "ws").mkdir()
    (home / "config.toml").write_text(fake.provider_config())
    try:
        clients.run_codex(fake, tmp_path / "ws", home, "go", features=("multi_agent_v2",))
    finally:
        fake.close()
    metas = [_json.loads(p.read_bytes().splitlines()[0])["payload"] for p in (home / "sessions").rglob("*.jsonl")]
    subs = [m for m in metas if m.get("thread_source") == "subagent"]
    assert len(metas) == 2 and len(subs) == 1 and subs[0]["session_id"] != subs[0]["id"]
    got = usage(capsule, "--codex-dir", str(home))
    assert pick(got["totals"]) == totals_of(fake.log, FakeResponses)
    (session,) = got["sessions"]
    assert session["session_id"] == subs[0]["session_id"] and session["threads"] == 1


def test_codex_forked_subagent_replaying_the_parents_history_is_counted_once(capsule, tmp_path):
    """`spawn_agent` with `fork_turns="all"` (the default since 0.144): the child's rollout starts
    with the parent's history replayed. Each call the fake answered counts once (the parent's
    replayed calls are not the child's), in the parent's session."""
    import json as _json

    from tests.measure import clients

    def fc(i, name, args, ns=None):
        item = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": name,
                "arguments": _json.dumps(args), "status": "completed"}
        return {**item, "namespace": ns} if ns else item

    def msg(text):
        return {"type": "message", "role": "assistant", "id": "m",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    def outputs(body):
        return {i.get("call_id") for i in body.get("input", []) if i.get("type") == "function_call_output"}

    def script(body, done):
        sub = any(i.get("type") == "agent_message" and "SUBMARK" in _json.dumps(i) for i in body.get("input", []))
        have = outputs(body)
        if sub:
            return [fc(100, "exec_command", {"cmd": "echo sub"})] if "call_100" not in have else [msg("sub done")]
        if "call_0" not in have:
            return [fc(0, "exec_command", {"cmd": "echo parent"})]
        if "call_1" not in have:
            return [fc(1, "spawn_agent", {"task_name": "sub_task", "message": "SUBMARK say hi",
                                          "fork_turns": "all"}, "collaboration")]
        if "call_2" not in have:
            return [fc(2, "wait_agent", {"timeout_ms": 20000}, "collaboration")]
        return [msg("done")]

    fake = FakeResponses(script)
    home = tmp_path / "codex-home"
    home.mkdir()
    (tmp_path / "ws").mkdir()
    (home / "config.toml").write_text(fake.provider_config())
    try:
        clients.run_codex(fake, tmp_path / "ws", home, "go", features=("multi_agent_v2",))
    finally:
        fake.close()
    rollouts = sorted((home / "sessions").rglob("*.jsonl"))
    metas = [_json.loads(p.read_bytes().splitlines()[0])["payload"] for p in rollouts]
    assert len(metas) == 2 and sum(m.get("thread_source") == "subagent" for m in metas) == 1, metas
    child = next(p for p, m in zip(rollouts, metas) if m.get("thread_source") == "subagent")
    lines = [_json.loads(line) for line in child.read_bytes().splitlines()]
    # the trap is real: the parent's first call and its output are replayed in the child's rollout
    replayed = [ln["payload"]["type"] for ln in lines if ln["type"] == "response_item"
                and ln["payload"].get("call_id") == "call_0"]
    assert replayed == ["function_call", "function_call_output"], replayed
    got = usage(capsule, "--codex-dir", str(home))
    assert pick(got["totals"]) == totals_of(fake.log, FakeResponses)
    (session,) = got["sessions"]
    assert session["calls"] == len(fake.log)
