"""EMISSIONS: ledger.db's `emissions` table, the one API every ledger row is written and read through.

One row per emission (every token saved or spent, and why): the schema, the typed row, the insert
(redacted, storable text) and the reads. Not responsible for computing savings (the pipeline does),
for summing rows (measure/ledger.py) or for rendering (cli/gain).
Invariant: append-only; a row is written for every observation the engine handles, in every mode
(measure-only rows record what would have been saved); the SQL for this table lives here only.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, asdict, field
from pathlib import Path
import json

from capsule.ground import paths
from capsule.store import finisher
from capsule.store import sqlite
from capsule.store import redact
from capsule.store.sqlite import connect

SCHEMA = """
CREATE TABLE IF NOT EXISTS emissions(
  id INTEGER PRIMARY KEY,
  ts REAL NOT NULL,
  scope TEXT,
  command TEXT,
  family TEXT,
  transform TEXT,
  stream TEXT,
  mode TEXT,
  applied INTEGER NOT NULL,
  raw_tokens INTEGER NOT NULL,
  emitted_tokens INTEGER NOT NULL,
  would_emit_tokens INTEGER,
  raw_bytes INTEGER NOT NULL,
  emitted_bytes INTEGER NOT NULL,
  exit_code INTEGER,
  handle TEXT,
  duration_ms REAL,
  token_label TEXT NOT NULL,
  intent TEXT,
  project TEXT,
  manifest TEXT NOT NULL,
  reports TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS emissions_ts ON emissions(ts);
"""
# Columns added after the first schema: older ledgers gain them on open.
ADDED_COLUMNS = {"would_emit_tokens": "INTEGER", "intent": "TEXT", "project": "TEXT"}

SUMMARY_COLUMNS = ("id", "ts", "scope", "command", "family", "transform", "stream", "mode", "applied",
                   "raw_tokens", "emitted_tokens", "would_emit_tokens", "raw_bytes", "emitted_bytes", "exit_code", "handle",
                   "duration_ms", "token_label", "project")
ALL_COLUMNS = SUMMARY_COLUMNS + ("intent", "manifest", "reports")


@dataclass
class Row:
    scope: str | None
    command: str | None
    family: str
    transform: str
    stream: str
    mode: str
    applied: bool
    raw_tokens: int
    emitted_tokens: int
    raw_bytes: int
    emitted_bytes: int
    exit_code: int | None
    handle: str | None
    duration_ms: float | None
    token_label: str
    would_emit_tokens: int | None = None   # what the transform would have emitted (measure-only rows)
    intent: str | None = None              # the step's goal, when the door knew it
    project: str | None = None             # the repository (or folder) it ran in: paths.project_of
    manifest: list[dict] = field(default_factory=list)
    reports: list[dict] = field(default_factory=list)
    ts: float = field(default_factory=time.time)


def _add_columns(conn) -> None:
    have = {r[1] for r in conn.execute("PRAGMA table_info(emissions)")}
    for column, decl in ADDED_COLUMNS.items():
        if column not in have:
            conn.execute(f"ALTER TABLE emissions ADD COLUMN {column} {decl}")


def storable(text: str) -> str:
    """Text SQLite can store: bytes that were not UTF-8 (lone surrogates, as Python decodes a raw file
    name on a command line) are written as \\xNN escapes instead of losing the whole row."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class Ledger:
    def __init__(self, path: Path | None = None, readonly: bool = False,
                 busy_timeout_ms: int = sqlite.BUSY_TIMEOUT_MS):
        """readonly=True (readers such as gain): a read-only state dir still shows its rows.
        busy_timeout_ms: how long a write waits for another writer (short on the output path)."""
        self.path = Path(path) if path else paths.ledger_path()
        self.conn = sqlite.connect_read(self.path) if readonly else connect(self.path, busy_timeout_ms)
        sqlite.ensure_schema(self.conn, self.path, SCHEMA, then=_add_columns)

    def record(self, row: Row) -> int:
        d = asdict(row)
        if d["project"] is None:      # a door that knew no cwd: the recording process's own
            try:
                d["project"] = paths.project_of(os.getcwd())
            except OSError:
                pass
        d["command"], d["intent"] = redact.redacted(d["command"]), redact.redacted(d["intent"])   # a token on a command line
        # the removed-line previews are the output's own lines: redacted like its archived copy (issue 31)
        d["manifest"] = json.dumps(redact.redacted_value(d["manifest"]))
        d["reports"] = json.dumps(redact.redacted_value(d["reports"]))
        d["applied"] = int(d["applied"])
        for key, value in d.items():
            if isinstance(value, str):
                d[key] = storable(value)
        cols = ",".join(d)
        marks = ",".join(f":{k}" for k in d)
        with sqlite.write(self.conn):
            self.conn.execute(f"INSERT INTO emissions({cols}) VALUES({marks})", d)
            return self.conn.last_insert_rowid()

    def _settled(self) -> None:
        """Rows of `ctx run`s that have exited may still be being written by their finishers."""
        finisher.wait(self.path.parent)

    def get(self, emission_id: int) -> dict | None:
        self._settled()
        row = self.conn.execute(f"SELECT {', '.join(ALL_COLUMNS)} FROM emissions WHERE id=?",
                                (emission_id,)).fetchone()
        if row is None:
            return None
        out = dict(zip(ALL_COLUMNS, row))
        out["manifest"] = json.loads(out["manifest"])
        out["reports"] = json.loads(out["reports"])
        return out

    def rows(self, since: float | None = None, settled: bool = True) -> list[dict]:
        """settled=False: what is written now, without waiting for owed rows (the engine's own reads
        while it serves: the rows it owes wait for its reply, so waiting for them would wait on itself)."""
        if settled:
            self._settled()
        cur = self.conn.execute(f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM emissions WHERE ts >= ? ORDER BY id",
                                (since or 0.0,))
        return [dict(zip(SUMMARY_COLUMNS, r)) for r in cur]

    def count(self) -> int:
        self._settled()
        return self.conn.execute("SELECT count(*) FROM emissions").fetchone()[0]

    def stats(self) -> dict:
        return {"rows": self.count(), "file_bytes": self.path.stat().st_size}

    def integrity(self) -> str:
        return self.conn.execute("PRAGMA quick_check").fetchone()[0]

    def close(self) -> None:
        self.conn.close()
