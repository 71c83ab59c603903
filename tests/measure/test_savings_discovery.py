"""Net savings (bounces are negative entries) and discovery, on rows stored through the real stores."""

from __future__ import annotations

from capsule.measure import discovery, savings
from capsule.measure.ledger import Ledger, Row
from capsule.measure.usage import Batch, ToolEvent, UsageStore

H = "0123456789abcdef01234567"
STANDING = {"tokens": 500, "parts": {"mcp tool schemas": 450, "agent instruction note": 50}, "label": "cl100k_base"}


def _ev(tid, ts, name, kind, target, tokens=None, digest=None, handle=None, sid="s1"):
    return ToolEvent("claude", tid, sid, ts=ts, name=name, kind=kind, target=target, result_tokens=tokens,
                     result_bytes=None if tokens is None else tokens * 4, result_hash=digest, handle=handle)


def test_net_savings_subtracts_standing_context_and_bounces(state_dir):
    ledger = Ledger()
    lossy = ledger.record(Row(scope="s1", command="pytest -q", family="pytest", transform="pytest", stream="stdout",
                              mode="standard", applied=True, raw_tokens=5000, emitted_tokens=800, raw_bytes=20000,
                              emitted_bytes=3200, exit_code=1, handle=H, duration_ms=1.0, token_label="cl100k_base"))
    other = ledger.record(Row(scope="another", command="ctx_read a.py signatures", family="read", transform="outline",
                              stream="stdout", mode="standard", applied=True, raw_tokens=3000, emitted_tokens=600,
                              raw_bytes=1, emitted_bytes=1, exit_code=0, handle=None, duration_ms=1.0,
                              token_label="cl100k_base"))
    store = UsageStore()
    store.write(Batch(tools=[
        _ev("t1", 1.0, "Bash", "command", "pytest -q", 800, handle=H),
        _ev("t2", 2.0, "Bash", "command", "pytest -q", 5000),                       # re-run right after: bounce
        _ev("t3", 3.0, "mcp__capsule__ctx_expand", "expand", H, 5000),              # expand: bounce
        _ev("t4", 4.0, "Bash", "command", "ls", 40),
    ]))
    (s,) = savings.analyse(store.tools(), ledger.rows(), STANDING)
    assert s["ledger_ids"] == [lossy]                   # joined by scope and handle; `other` is not this session's
    assert s["removed_tokens"] == 4200
    assert s["added_tokens"] == 500
    assert [b["why"] for b in s["bounces"]] == ["re-run after a lossy emission", "expand"]
    assert s["bounce_tokens"] == 10_000
    assert s["net_tokens"] == 4200 - 500 - 10_000 < 0
    assert s["received_tokens"] == 800 + 5000 + 5000 + 40
    assert s["by_family"] == {"pytest": 4200} and s["by_door"] == {"shell": 4200}
    assert other not in s["ledger_ids"]


def test_discovery_finds_rereads_repeats_and_the_largest(state_dir):
    store = UsageStore()
    store.write(Batch(tools=[
        _ev("r1", 1.0, "Read", "read", "/w/a.py", 300, "h1"),
        _ev("r2", 2.0, "Read", "read", "/w/a.py", 300, "h1"),                 # unchanged re-read
        _ev("e1", 3.0, "Edit", "edit", "/w/a.py"),
        _ev("r3", 4.0, "Read", "read", "/w/a.py", 310, "h2"),                 # changed, by the agent
        _ev("c1", 5.0, "Bash", "command", "make test", 900),
        _ev("c2", 6.0, "Bash", "command", "make test", 900),                  # repeated, no edit between
        _ev("e2", 7.0, "Write", "edit", "/w/b.py"),
        _ev("c3", 8.0, "Bash", "command", "make test", 950),                  # after an edit: not a repeat
        _ev("r4", 9.0, "Read", "read", "/w/a.py", 320, "h3"),                 # changed by someone else
        _ev("x1", 1.0, "Read", "read", "/w/a.py", 300, "h1", sid="s2"),       # another session: no re-read
    ]))
    d = discovery.analyse(store.tools())
    got = [(r["state"], r["by_agent"], r["tool_ids"]) for r in d["rereads"]]
    assert got == [("unchanged", False, ["r1", "r2"]), ("changed", True, ["r2", "r3"]),
                   ("changed", False, ["r3", "r4"])]
    assert [(r["command"], r["tool_ids"]) for r in d["repeated_commands"]] == [("make test", ["c1", "c2"])]
    assert d["largest_results"][0]["tool_id"] == "c3"
    assert d["totals"]["unchanged_reread_tokens"] == 300
    assert d["across_sessions"]["rereads_by_path"][0] == {"path": "/w/a.py", "times": 3, "tokens": 930,
                                                          "sessions": 1}
