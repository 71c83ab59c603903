"""USAGE ROWS: usage.db's `calls`, `tools`, `sessions` and `files` tables, the one API they are written through.

One row per model API call (four billing buckets), per tool call, per session, and per ingested
transcript file (its offset). The schema, the typed records, the bounds a value from outside must
meet before it is stored, the upserts and the reads live here. Not responsible for parsing
transcripts (measure/transcripts, measure/ingest.py), prices or reports, nor for the one entry a
door calls for a single API call (measure/usage.py: record_usage).
Invariant: a call is counted once per (agent, call_id): writing it again never changes a total,
except that a proxy row (ground truth) replaces a transcript row and a transcript entry with a
larger output count replaces a mid-stream one; the SQL for these tables lives here only.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from capsule.ground import paths
from capsule.store import redact
from capsule.store import sqlite
from capsule.store.sqlite import connect

BUCKETS = ("input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h", "output_tokens")
SOURCES = ("proxy", "transcript")

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls(
  agent TEXT NOT NULL,
  call_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  thread_id TEXT,
  model TEXT,
  ts REAL,
  input_tokens INTEGER NOT NULL,
  cache_read_input_tokens INTEGER NOT NULL,
  cache_creation_5m INTEGER NOT NULL,
  cache_creation_1h INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cost_usd REAL,
  source TEXT NOT NULL,
  origin TEXT,
  complete INTEGER NOT NULL DEFAULT 1,
  seq INTEGER,
  PRIMARY KEY(agent, call_id)
);
CREATE INDEX IF NOT EXISTS calls_session ON calls(agent, session_id, ts);
CREATE TABLE IF NOT EXISTS tools(
  agent TEXT NOT NULL,
  tool_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  thread_id TEXT,
  ts REAL,
  name TEXT,
  kind TEXT,
  target TEXT,
  result_tokens INTEGER,
  result_bytes INTEGER,
  result_hash TEXT,
  is_error INTEGER,
  handle TEXT,
  seq INTEGER,
  PRIMARY KEY(agent, tool_id)
);
CREATE INDEX IF NOT EXISTS tools_session ON tools(agent, session_id, ts);
CREATE TABLE IF NOT EXISTS sessions(
  agent TEXT NOT NULL,
  session_id TEXT NOT NULL,
  cwd TEXT,
  parent TEXT,
  first_ts REAL,
  last_ts REAL,
  origin TEXT,
  seq INTEGER,
  PRIMARY KEY(agent, session_id)
);
CREATE TABLE IF NOT EXISTS files(
  path TEXT PRIMARY KEY,
  identity TEXT NOT NULL,
  offset INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT '{}',
  lines INTEGER NOT NULL DEFAULT 0
);
"""
# `seq`: a store-wide change counter per table, set on every insert AND update of a row, so a reader
# copying rows elsewhere (capsule fleet sync) resumes after the last seq it copied and sees changed
# rows again. Writers serialise on BEGIN IMMEDIATE, so seqs commit in increasing order.
# The same columns and keys are capsule.fleet.schema's (tests/fleet/test_schema.py proves it).
SEQ_TABLES = ("calls", "tools", "sessions")
_SEQ = "(SELECT coalesce(max(seq), 0) + 1 FROM {table})"


def _add_seq(conn) -> None:
    """Stores made before `seq` gain it on open; their rows get seq = rowid (in insertion order)."""
    for table in SEQ_TABLES:
        if "seq" not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN seq INTEGER")
            conn.execute(f"UPDATE {table} SET seq = rowid")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_seq ON {table}(seq)")


@dataclass
class Call:
    agent: str
    call_id: str
    session_id: str
    model: str | None
    ts: float | None
    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_5m: int = 0
    cache_creation_1h: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    thread_id: str | None = None
    source: str = "transcript"
    origin: str | None = None
    complete: bool = True


@dataclass
class ToolEvent:
    """A tool call and (when seen) its result; fields left None are filled by a later sighting."""
    agent: str
    tool_id: str
    session_id: str
    thread_id: str | None = None
    ts: float | None = None
    name: str | None = None
    kind: str | None = None          # read | edit | command | expand | compact | other
    target: str | None = None        # file path or command line
    result_tokens: int | None = None
    result_bytes: int | None = None
    result_hash: str | None = None
    is_error: bool | None = None
    handle: str | None = None        # a capsule <<ccr:…>> handle shown in the result


@dataclass
class Session:
    agent: str
    session_id: str
    cwd: str | None = None
    parent: str | None = None
    first_ts: float | None = None
    last_ts: float | None = None
    origin: str | None = None


@dataclass
class Batch:
    calls: list[Call] = field(default_factory=list)
    tools: list[ToolEvent] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)
    # Route facts a transcript holds (Codex rollouts: rate_limits events, task boundaries): written
    # to the quota store and the ledger's route log by ingest, not to this store.
    route: list[dict] = field(default_factory=list)
    rejected: int = 0          # records (or fields) check() refused: counted as skipped, never stored


# What a stored value may be. A transcript is data someone else wrote: 2**64 does not fit SQLite,
# 1e999 is infinity (not JSON), True is not $1, year 1 is no timestamp, a dict is not a cwd.
MAX_COUNT = 10 ** 12             # tokens or bytes in one call or result
MAX_COST_USD = 10 ** 6           # one call
TS_RANGE = (0.0, 4_102_444_800.0)            # 1970 .. 2100 (a year-1 timestamp is negative)
MAX_TEXT = 16_384                # ids, names, paths, command lines
_TIMES = {"ts", "first_ts", "last_ts"}

def _ok(name: str, value, kind: str) -> bool:
    base = kind.split(" |")[0]
    if value is None:
        return kind.endswith("None")
    if base == "str":
        return isinstance(value, str) and len(value) <= MAX_TEXT
    if base == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if base == "int":
        return isinstance(value, int) and 0 <= value <= MAX_COUNT
    if base == "float":
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        lo, hi = TS_RANGE if name in _TIMES else (0, MAX_COST_USD)
        return lo <= value <= hi
    return True


def check(record) -> bool | None:
    """Make `record` fit to store. True: it was; False: a bad optional value became None (a bad
    count 0); None: drop it (a required value is wrong, or a call's time is absurd)."""
    fine = True
    for f in fields(record):
        value = getattr(record, f.name)
        if _ok(f.name, value, f.type):
            continue
        if (f.type not in ("int",) and not f.type.endswith("None")) or (f.name == "ts" and isinstance(record, Call)):
            return None
        setattr(record, f.name, 0 if f.type == "int" else None)
        fine = False
    return fine


def checked(batch: Batch) -> Batch:
    """The batch with only storable records; batch.rejected counts those dropped or cleaned."""
    for name in ("calls", "tools", "sessions"):
        kept = []
        for record in getattr(batch, name):
            try:
                ok = check(record)
            except Exception:  # noqa: BLE001 - a value too odd to even inspect
                ok = None
            if ok is not True:
                batch.rejected += 1
            if ok is not None:
                kept.append(record)
        setattr(batch, name, kept)
    return batch


# A proxy row replaces anything; a transcript row replaces a transcript row only with a larger
# output count (Claude Code writes mid-stream entries first: USAGE-FORMATS trap 2).
_UPSERT_CALL = """
INSERT INTO calls(agent, call_id, session_id, thread_id, model, ts, input_tokens, cache_read_input_tokens,
                  cache_creation_5m, cache_creation_1h, output_tokens, cost_usd, source, origin, complete, seq)
VALUES(:agent, :call_id, :session_id, :thread_id, :model, :ts, :input_tokens, :cache_read_input_tokens,
       :cache_creation_5m, :cache_creation_1h, :output_tokens, :cost_usd, :source, :origin, :complete, {seq})
ON CONFLICT(agent, call_id) DO UPDATE SET
  seq = {seq},
  input_tokens = CASE WHEN {take} THEN excluded.input_tokens ELSE input_tokens END,
  cache_read_input_tokens = CASE WHEN {take} THEN excluded.cache_read_input_tokens ELSE cache_read_input_tokens END,
  cache_creation_5m = CASE WHEN {take} THEN excluded.cache_creation_5m ELSE cache_creation_5m END,
  cache_creation_1h = CASE WHEN {take} THEN excluded.cache_creation_1h ELSE cache_creation_1h END,
  cost_usd = CASE WHEN {take} THEN coalesce(excluded.cost_usd, cost_usd) ELSE coalesce(cost_usd, excluded.cost_usd) END,
  model = coalesce(model, excluded.model),
  thread_id = coalesce(thread_id, excluded.thread_id),
  complete = max(complete, excluded.complete),
  output_tokens = CASE WHEN {take} THEN excluded.output_tokens ELSE output_tokens END,
  source = CASE WHEN excluded.source = 'proxy' THEN 'proxy' ELSE source END
""".format(seq=_SEQ.format(table="calls"), take="(excluded.source = 'proxy' OR (source = 'transcript' AND excluded.source = 'transcript' "
                "AND excluded.output_tokens > output_tokens))")

_TOOL_COLS = ("session_id", "thread_id", "ts", "name", "kind", "target", "result_tokens", "result_bytes",
              "result_hash", "is_error", "handle")
_UPSERT_TOOL = ("INSERT INTO tools(agent, tool_id, " + ", ".join(_TOOL_COLS) + ", seq) VALUES(:agent, :tool_id, "
                + ", ".join(f":{c}" for c in _TOOL_COLS) + f", {_SEQ.format(table='tools')}) "
                + f"ON CONFLICT(agent, tool_id) DO UPDATE SET seq = {_SEQ.format(table='tools')}, "
                + ", ".join(f"{c} = coalesce({c}, excluded.{c})" for c in _TOOL_COLS if c not in ("kind", "target"))
                # A command that turns out to be a file read (Codex's parsed_cmd) is a read of that path.
                + ", kind = CASE WHEN excluded.kind = 'read' THEN 'read' ELSE coalesce(kind, excluded.kind) END"
                + ", target = CASE WHEN excluded.kind = 'read' THEN excluded.target ELSE coalesce(target, excluded.target) END")

_UPSERT_SESSION = """
INSERT INTO sessions(agent, session_id, cwd, parent, first_ts, last_ts, origin, seq)
VALUES(:agent, :session_id, :cwd, :parent, :first_ts, :last_ts, :origin, {seq})
ON CONFLICT(agent, session_id) DO UPDATE SET
  seq = {seq},
  cwd = coalesce(cwd, excluded.cwd), parent = coalesce(parent, excluded.parent),
  first_ts = min(coalesce(first_ts, excluded.first_ts), coalesce(excluded.first_ts, first_ts)),
  last_ts = max(coalesce(last_ts, excluded.last_ts), coalesce(excluded.last_ts, last_ts)),
  origin = coalesce(origin, excluded.origin)
""".format(seq=_SEQ.format(table="sessions"))


class UsageStore:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else paths.usage_path()
        self.conn = connect(self.path)
        with sqlite.write(self.conn):
            self.conn.execute(SCHEMA)
            _add_seq(self.conn)

    def close(self) -> None:
        self.conn.close()

    # ---- writes ---------------------------------------------------------------------
    def write(self, batch: Batch, file_update: tuple | None = None) -> None:
        """Store a batch and (for ingestion) the file's new offset in ONE transaction, so a crash
        never leaves rows without the offset that says they were read (or the reverse)."""
        checked(batch)
        with sqlite.write(self.conn):
            self._write(batch)
            if file_update is not None:
                self.conn.execute("INSERT INTO files(path, identity, offset, state, lines) VALUES(?,?,?,?,?) "
                                  "ON CONFLICT(path) DO UPDATE SET identity=excluded.identity, "
                                  "offset=excluded.offset, state=excluded.state, lines=excluded.lines",
                                  file_update)

    def _write(self, batch: Batch) -> None:
        for c in batch.calls:
            d = asdict(c)
            d["complete"] = int(d["complete"])
            self.conn.execute(_UPSERT_CALL, d)
        for t in batch.tools:
            d = asdict(t)
            d["target"] = redact.redacted(d["target"])     # a command line from a transcript
            if d["is_error"] is not None:
                d["is_error"] = int(d["is_error"])
            self.conn.execute(_UPSERT_TOOL, d)
        for s in batch.sessions:
            self.conn.execute(_UPSERT_SESSION, asdict(s))

    def skipped(self) -> int:
        """Transcript lines skipped and values refused, over every file ingested so far."""
        total = 0
        for (state,) in self.conn.execute("SELECT state FROM files"):
            try:
                d = json.loads(state)
                total += int(d.get("bad_lines", 0)) + int(d.get("bad_values", 0))
            except (ValueError, TypeError, AttributeError):
                continue
        return total

    def file_state(self, path: str) -> tuple[str, int, str, int] | None:
        row = self.conn.execute("SELECT identity, offset, state, lines FROM files WHERE path=?", (path,)).fetchone()
        return tuple(row) if row else None

    # ---- reads ----------------------------------------------------------------------
    def calls(self, since: float | None = None, agent: str | None = None, session: str | None = None) -> list[dict]:
        cols = ("agent", "call_id", "session_id", "thread_id", "model", "ts", *BUCKETS, "cost_usd", "source",
                "origin", "complete")
        sql = f"SELECT {', '.join(cols)} FROM calls WHERE coalesce(ts, 0) >= ?"
        args: list = [since or 0.0]
        if agent:
            sql += " AND agent = ?"
            args.append(agent)
        if session:
            sql += " AND session_id = ?"
            args.append(session)
        return [dict(zip(cols, r)) for r in self.conn.execute(sql + " ORDER BY ts, call_id", args)]

    def tools(self, since: float | None = None) -> list[dict]:
        cols = ("agent", "tool_id", *_TOOL_COLS)
        return [dict(zip(cols, r)) for r in self.conn.execute(
            f"SELECT {', '.join(cols)} FROM tools WHERE coalesce(ts, 0) >= ? ORDER BY ts, tool_id", (since or 0.0,))]

    def sessions(self) -> dict[tuple[str, str], dict]:
        cols = ("agent", "session_id", "cwd", "parent", "first_ts", "last_ts", "origin")
        return {(r[0], r[1]): dict(zip(cols, r)) for r in self.conn.execute(f"SELECT {', '.join(cols)} FROM sessions")}

    def file_offsets(self) -> dict[str, tuple[str, int]]:
        """path -> (identity, offset) of every ingested file whose state is current."""
        return {r[0]: (r[1], r[2]) for r in self.conn.execute(
            "SELECT path, identity, offset FROM files WHERE state LIKE '%\"_sessions\"%'")}

    def sessions_in(self, roots: tuple[str, ...]) -> set[tuple[str, str]]:
        """(agent, session) pairs held by ingested files under any of `roots` (path prefixes)."""
        out = set()
        for path, state in self.conn.execute("SELECT path, state FROM files"):
            if path.startswith(roots):
                st = json.loads(state)
                out.update((st.get("_agent"), sid) for sid in st.get("_sessions", []))
        return out

    def counts(self) -> dict:
        return {t: self.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("calls", "tools", "sessions", "files")}
