"""ROUTE ROWS: ledger.db's `route_events` and `route_inputs`, the one API the route log is written through.

The ledger's record of task boundaries, routing decisions and in-conversation changes.

One row per event in ledger.db's `route_events`: kind = boundary (a new session, conversation,
subagent, /clear, compaction, user prompt), decision (the lane chosen at a boundary and why),
change (a model or effort that moved inside a conversation, with who did it and the cache write it
cost), notice (a 429 / rejected answer shown to the user). Not responsible for deciding anything
(capsule/route). Invariant: append-only, like the emissions table; detail is JSON without
credentials; the SQL for these tables lives here only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from capsule.ground import paths
from capsule.store import sqlite
from capsule.store.sqlite import connect

SCHEMA = """
CREATE TABLE IF NOT EXISTS route_events(
  id INTEGER PRIMARY KEY,
  ts REAL NOT NULL,
  kind TEXT NOT NULL,
  session TEXT,
  conversation TEXT,
  task_class TEXT,
  source TEXT,
  reason TEXT,
  detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS route_events_ts ON route_events(ts);
CREATE TABLE IF NOT EXISTS route_inputs(path TEXT PRIMARY KEY, offset INTEGER NOT NULL);
"""
MAX_LINE = 64 << 10
KINDS = ("boundary", "decision", "change", "notice")
CLIENT_HOOK = "client hook"    # the source of a change the client's own hook reported (not the proxy's view)
COLS = ("id", "ts", "kind", "session", "conversation", "task_class", "source", "reason", "detail")


class RouteLog:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else paths.ledger_path()
        self.conn = connect(self.path)
        with sqlite.write(self.conn):
            self.conn.execute(SCHEMA)

    def record(self, kind: str, *, session: str | None = None, conversation: str | None = None,
               task_class: str | None = None, source: str | None = None, reason: str = "",
               detail: dict | None = None, ts: float | None = None) -> int:
        if kind not in KINDS:
            raise ValueError(f"route event kind {kind!r}: expected one of {KINDS}")
        with sqlite.write(self.conn):
            self.conn.execute("INSERT INTO route_events(ts, kind, session, conversation, task_class, source, reason, "
                              "detail) VALUES(?,?,?,?,?,?,?,?)",
                              (time.time() if ts is None else ts, kind, session, conversation, task_class, source,
                               reason, json.dumps(detail or {}, sort_keys=True)))
            return self.conn.last_insert_rowid()

    def ingest(self, path: Path) -> int:
        """Boundary lines the client hooks appended (paths.BOUNDARIES_FILE), each once: the offset read
        so far is stored with the rows, in one transaction. A torn or hostile line is skipped. A line
        may say `"kind": "change"` (a model switch the client reported, source `client hook`)."""
        try:
            size = path.stat().st_size
        except OSError:
            return 0
        row = self.conn.execute("SELECT offset FROM route_inputs WHERE path=?", (str(path),)).fetchone()
        start = row[0] if row and row[0] <= size else 0
        if start >= size:
            return 0
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(size - start)
        end = data.rfind(b"\n") + 1            # a line still being written waits for the next read
        added = 0
        with sqlite.write(self.conn):
            for line in data[:end].splitlines():
                try:
                    rec = json.loads(line) if len(line) <= MAX_LINE else None
                except ValueError:
                    rec = None
                if not isinstance(rec, dict) or not isinstance(rec.get("ts"), (int, float)):
                    continue
                self.conn.execute("INSERT INTO route_events(ts, kind, session, conversation, task_class, source, "
                                  "reason, detail) VALUES(?,?,?,?,?,?,?,?)",
                                  (float(rec["ts"]), "change" if rec.get("kind") == "change" else "boundary",
                                   str(rec.get("session") or "")[:80], None,
                                   str(rec.get("task_class") or "main")[:20],
                                   CLIENT_HOOK if rec.get("kind") == "change" else "claude hook",
                                   str(rec.get("reason") or "")[:200],
                                   json.dumps(rec.get("detail") if isinstance(rec.get("detail"), dict) else {},
                                              sort_keys=True)[:4000]))
                added += 1
            self.conn.execute("INSERT INTO route_inputs(path, offset) VALUES(?, ?) ON CONFLICT(path) DO UPDATE "
                              "SET offset=excluded.offset", (str(path), start + end))
        return added

    def rows(self, since: float | None = None) -> list[dict]:
        boundaries = self.path.parent / paths.BOUNDARIES_FILE
        if boundaries.exists():
            self.ingest(boundaries)
        out = []
        for r in self.conn.execute(f"SELECT {', '.join(COLS)} FROM route_events WHERE ts >= ? ORDER BY ts, id",
                                   (since or 0.0,)):
            d = dict(zip(COLS, r))
            d["detail"] = json.loads(d["detail"])
            out.append(d)
        return out

    def close(self) -> None:
        self.conn.close()


def read(path: Path | None = None, since: float | None = None) -> list[dict]:
    p = Path(path) if path else paths.ledger_path()
    if not p.exists():
        return []
    log = RouteLog(p)
    try:
        return log.rows(since)
    finally:
        log.close()
