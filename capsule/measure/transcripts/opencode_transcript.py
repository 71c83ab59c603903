"""OpenCode sessions (`$XDG_DATA_HOME/opencode/opencode.db`, SQLite) -> calls, sessions.

Not responsible for finding the database or storing rows (capsule.measure.ingest). Reads only:
the database is opened read-only (OpenCode may be writing it; WAL lets both go on). A call is an
assistant row of `message` with `tokens`: `input` (fresh), `cache.read`, `cache.write`, `output`
and the cost OpenCode computed itself; the message id is the call id, so reading the database
again counts nothing twice. Invariant: a row that fails to parse is skipped and counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw

from capsule.measure.transcripts.transcript_common import guarded, text
from capsule.measure.usage import Batch, Call, Session

AGENT = "opencode"


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def usage_buckets(t: dict) -> dict:
    cache = t.get("cache") if isinstance(t.get("cache"), dict) else {}
    return {"input_tokens": _int(t.get("input")), "cache_read_input_tokens": _int(cache.get("read")),
            "cache_creation_5m": _int(cache.get("write")), "cache_creation_1h": 0,
            "output_tokens": _int(t.get("output"))}


def read(db: Path, state: dict) -> Batch:
    """Every call and session in `db` (state["bad_lines"] counts the rows skipped)."""

    batch = Batch()
    conn = apsw.Connection(f"file:{Path(db)}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        conn.set_busy_timeout(2000)
        origin = str(db)
        for sid, directory, parent, created, updated in conn.execute(
                "SELECT id, directory, parent_id, time_created, time_updated FROM session ORDER BY id"):
            with guarded(batch, state):
                batch.sessions.append(Session(AGENT, sid, cwd=text(directory), parent=text(parent),
                                              first_ts=created / 1000 if isinstance(created, int) else None,
                                              last_ts=updated / 1000 if isinstance(updated, int) else None,
                                              origin=origin))
        for mid, sid, created, data in conn.execute(
                "SELECT id, session_id, time_created, data FROM message ORDER BY id"):
            with guarded(batch, state):
                _message(mid, sid, created, json.loads(data), origin, batch)
    finally:
        conn.close()
    return batch


def _message(mid, sid, created, d, origin: str, batch: Batch) -> None:
    if not isinstance(d, dict) or d.get("role") != "assistant" or not isinstance(d.get("tokens"), dict):
        return
    cost = d.get("cost")
    done = isinstance(d.get("time"), dict) and d["time"].get("completed") is not None
    batch.calls.append(Call(agent=AGENT, call_id=mid, session_id=sid, model=text(d.get("modelID")),
                            ts=created / 1000 if isinstance(created, int) else None, origin=origin, complete=done,
                            cost_usd=cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0
                            else None, **usage_buckets(d["tokens"])))
