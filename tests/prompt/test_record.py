"""prompt/record.py: which register a usage session ran with, from the supervisor's run records."""

from __future__ import annotations

import os
import stat

from capsule.prompt import record


def test_sessions_are_matched_by_agent_workspace_and_time_and_the_rest_are_unrecorded(tmp_path):
    terse = record.start(tmp_path, agent="claude", cwd="/w", role="r", output={}, text="T")
    record.end(tmp_path, terse)
    compact = record.start(tmp_path, agent="claude", cwd="/w", role="r", output={"register": "compact"}, text="C")
    runs = record.runs(tmp_path)
    assert [r["register"] for r in runs] == ["terse", "compact"] and runs[1]["end"] is None
    assert stat.S_IMODE(os.stat(record.runs_path(tmp_path)).st_mode) == 0o600
    runs[0]["end"] = runs[0]["ts"] + 60            # the runs as they happen: a minute each, an hour apart
    runs[1]["ts"] = runs[0]["ts"] + 3600
    t0, t1 = runs[0]["ts"], runs[1]["ts"]
    sessions = [
        {"agent": "claude", "cwd": "/w", "first_ts": t0 + 0.001, "calls": 4, "output_tokens": 400},
        {"agent": "claude", "cwd": "/w", "first_ts": t1 + 0.5, "calls": 2, "output_tokens": 100},
        {"agent": "codex", "cwd": "/w", "first_ts": t1 + 0.5, "calls": 1, "output_tokens": 9},     # no codex run
        {"agent": "claude", "cwd": "/other", "first_ts": t1 + 0.5, "calls": 1, "output_tokens": 7},
        {"agent": "claude", "cwd": "/w", "first_ts": t0 - 3600, "calls": 1, "output_tokens": 5},   # before any run
    ]
    got = record.by_register(sessions, runs)
    assert got["terse"] == {"sessions": 1, "calls": 4, "output_tokens": 400, "output_per_call": 100.0}
    assert got["compact"] == {"sessions": 1, "calls": 2, "output_tokens": 100, "output_per_call": 50.0}
    assert got["unrecorded"]["sessions"] == 3


def test_a_corrupt_line_is_skipped(tmp_path):
    run = record.start(tmp_path, agent="codex", cwd="/w", role="r", output={"register": "off"}, text="")
    with open(record.runs_path(tmp_path), "a") as f:
        f.write("{not json\n")
    record.end(tmp_path, run)
    (only,) = record.runs(tmp_path)
    assert only["register"] == "off" and only["end"] is not None
