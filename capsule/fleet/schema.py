"""THE SCHEMA: one SQLAlchemy Core definition of every row capsule keeps, for SQLite and PostgreSQL.

Each synced table is a capsule's local table (ledger.db `emissions`, `route_events`; usage.db
`calls`, `tools`, `sessions`; quota.db `quota_samples`) plus a `capsule` column naming the source, its key the local key behind `capsule`; the
fleet adds `capsules` (the tags: container, role, host, account) and `sync_cursors`. Not
responsible for writing local rows (capsule.measure keeps its apsw DDL on the hot path; a test
proves it equals LOCAL below) or for migrating (capsule/fleet/migrations, whose head equals this).
Invariant: a column, type or key changes here and in a new migration together, never one alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import (BigInteger, Column, Double, ForeignKey, Index, Integer, MetaData, PrimaryKeyConstraint,
                        Table, Text)

metadata = MetaData()
SOURCE = "capsule"        # the tag column every synced table carries first


def _source() -> Column:
    return Column(SOURCE, Text, ForeignKey("capsules.capsule"), nullable=False)


capsules = Table(
    "capsules", metadata,
    Column("capsule", Text, primary_key=True),   # stable id of one state dir / volume (fleet.sources)
    Column("container", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("host", Text, nullable=False),
    Column("account", Text, nullable=False),
    Column("source", Text, nullable=False),        # where it was read: a path or docker volume
    Column("first_sync", Double, nullable=False),
    Column("last_sync", Double, nullable=False),
)

sync_cursors = Table(
    "sync_cursors", metadata,
    _source(),
    Column("tbl", Text, nullable=False),
    Column("position", BigInteger, nullable=False),   # the last local id / seq copied
    PrimaryKeyConstraint(SOURCE, "tbl"),
)

emissions = Table(
    "emissions", metadata,
    _source(),
    Column("id", BigInteger, nullable=False),
    Column("ts", Double, nullable=False),
    Column("scope", Text),
    Column("command", Text),
    Column("family", Text),
    Column("transform", Text),
    Column("stream", Text),
    Column("mode", Text),
    Column("applied", Integer, nullable=False),
    Column("raw_tokens", BigInteger, nullable=False),
    Column("emitted_tokens", BigInteger, nullable=False),
    Column("would_emit_tokens", BigInteger),
    Column("raw_bytes", BigInteger, nullable=False),
    Column("emitted_bytes", BigInteger, nullable=False),
    Column("exit_code", Integer),
    Column("handle", Text),
    Column("duration_ms", Double),
    Column("token_label", Text, nullable=False),
    Column("intent", Text),
    Column("project", Text),
    Column("manifest", Text, nullable=False),
    Column("reports", Text, nullable=False),
    PrimaryKeyConstraint(SOURCE, "id"),
    Index("emissions_ts", "ts"),
)

calls = Table(
    "calls", metadata,
    _source(),
    Column("agent", Text, nullable=False),
    Column("call_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("thread_id", Text),
    Column("model", Text),
    Column("ts", Double),
    Column("input_tokens", BigInteger, nullable=False),
    Column("cache_read_input_tokens", BigInteger, nullable=False),
    Column("cache_creation_5m", BigInteger, nullable=False),
    Column("cache_creation_1h", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cost_usd", Double),
    Column("source", Text, nullable=False),
    Column("origin", Text),
    Column("complete", Integer, nullable=False, server_default="1"),
    Column("seq", BigInteger),      # the store's change counter: the sync's cursor (rows are upserted)
    PrimaryKeyConstraint(SOURCE, "agent", "call_id"),
    Index("calls_session", "agent", "session_id", "ts"),
    Index("calls_seq", "seq"),
)

tools = Table(
    "tools", metadata,
    _source(),
    Column("agent", Text, nullable=False),
    Column("tool_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("thread_id", Text),
    Column("ts", Double),
    Column("name", Text),
    Column("kind", Text),
    Column("target", Text),
    Column("result_tokens", BigInteger),
    Column("result_bytes", BigInteger),
    Column("result_hash", Text),
    Column("is_error", Integer),
    Column("handle", Text),
    Column("seq", BigInteger),
    PrimaryKeyConstraint(SOURCE, "agent", "tool_id"),
    Index("tools_session", "agent", "session_id", "ts"),
    Index("tools_seq", "seq"),
)

sessions = Table(
    "sessions", metadata,
    _source(),
    Column("agent", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("cwd", Text),
    Column("parent", Text),
    Column("first_ts", Double),
    Column("last_ts", Double),
    Column("origin", Text),
    Column("seq", BigInteger),
    PrimaryKeyConstraint(SOURCE, "agent", "session_id"),
    Index("sessions_seq", "seq"),
)


route_events = Table(      # ledger.db (capsule.store.route_rows): boundaries, decisions, changes
    "route_events", metadata,
    _source(),
    Column("id", BigInteger, nullable=False),
    Column("ts", Double, nullable=False),
    Column("kind", Text, nullable=False),
    Column("session", Text),
    Column("conversation", Text),
    Column("task_class", Text),
    Column("source", Text),
    Column("reason", Text),
    Column("detail", Text, nullable=False),
    PrimaryKeyConstraint(SOURCE, "id"),
    Index("route_events_ts", "ts"),
)

quota_samples = Table(     # quota.db (capsule.store.quota_rows): rate-limit windows from response headers
    "quota_samples", metadata,
    _source(),
    Column("id", BigInteger, nullable=False),
    Column("ts", Double, nullable=False),
    Column("account", Text, nullable=False),
    Column("regime", Text, nullable=False),
    Column("api", Text, nullable=False),
    Column("window", Text, nullable=False),
    Column("utilization", Double, nullable=False),
    Column("status", Text),
    Column("resets_at", Double),
    Column("session", Text),
    Column("source", Text, nullable=False),
    PrimaryKeyConstraint(SOURCE, "id"),
    Index("quota_window", "account", "window", "ts"),
)


@dataclass(frozen=True)
class Synced:
    """A table copied from each capsule: which local file holds it and which column is its cursor.
    `append_only` rows never change once written (copied once); the others are upserted locally and
    carry `seq`, bumped on every write, so a changed row is copied again."""
    table: Table
    db: str             # the local file name (capsule.ground.paths)
    cursor: str
    append_only: bool

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def columns(self) -> tuple[str, ...]:
        """The local columns, in order (the fleet's without the `capsule` tag)."""
        return tuple(c.name for c in self.table.columns if c.name != SOURCE)

    @property
    def local_key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.table.primary_key.columns if c.name != SOURCE)


SYNCED = (
    Synced(emissions, "ledger.db", "id", True),
    Synced(calls, "usage.db", "seq", False),
    Synced(tools, "usage.db", "seq", False),
    Synced(sessions, "usage.db", "seq", False),
    Synced(route_events, "ledger.db", "id", True),
    Synced(quota_samples, "quota.db", "id", True),
)
LOCAL = {s.name: s for s in SYNCED}
