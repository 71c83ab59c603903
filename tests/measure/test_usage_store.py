"""The usage store's one write function and its precedence rules, on a real SQLite file."""

from __future__ import annotations

import pytest

from capsule.measure.usage import UsageStore, record_usage


def test_record_usage_is_idempotent_and_the_proxy_wins(state_dir):
    store = UsageStore()
    kw = dict(input_tokens=5, cache_read_input_tokens=100, cache_creation_5m=20, cache_creation_1h=3, store=store)
    record_usage("s1", "claude", "claude-sonnet-4-5", "msg_1", output_tokens=1, source="transcript", ts=10.0, **kw)
    record_usage("s1", "claude", "claude-sonnet-4-5", "msg_1", output_tokens=1, source="transcript", ts=10.0, **kw)
    assert [c["output_tokens"] for c in store.calls()] == [1]
    # A later transcript entry of the same response with the final output count replaces the mid-stream one.
    record_usage("s1", "claude", "claude-sonnet-4-5", "msg_1", output_tokens=77, source="transcript", ts=10.0, **kw)
    assert [c["output_tokens"] for c in store.calls()] == [77]
    # The proxy saw the real response: it replaces the transcript figures, whatever they were.
    record_usage("s1", "claude", "claude-sonnet-4-5", "msg_1", output_tokens=70, source="proxy", ts=10.0, **kw)
    (row,) = store.calls()
    assert (row["output_tokens"], row["source"]) == (70, "proxy")
    # ...and a transcript entry seen afterwards cannot undo it.
    record_usage("s1", "claude", "claude-sonnet-4-5", "msg_1", output_tokens=99, source="transcript", ts=10.0, **kw)
    assert [c["output_tokens"] for c in store.calls()] == [70]
    record_usage("s1", "claude", "claude-sonnet-4-5", "msg_2", output_tokens=3, source="proxy", ts=11.0, **kw)
    assert len(store.calls()) == 2 and store.counts()["sessions"] == 1


@pytest.mark.parametrize("bad", [dict(source="guess"), dict(input_tokens=-1), dict(output_tokens=1.5)])
def test_record_usage_refuses_bad_input(state_dir, bad):
    store = UsageStore()
    with pytest.raises(ValueError):
        record_usage("s", "claude", "m", "msg_x", store=store, **bad)
    assert store.calls() == []
