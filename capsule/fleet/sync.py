"""FLEET SYNC: copy new rows from each capsule's state (read-only) into the fleet database.

Per source and table, one batch at a time: read rows after the stored cursor from the local SQLite
(one read snapshot, so a capsule writing meanwhile is never seen half-done), then in ONE fleet
transaction insert them and move the cursor. Not responsible for finding sources
(capsule.fleet.sources) or reporting. Invariants: never writes to a state dir; a row is keyed by
(capsule, local key), so copying it twice (a retry after a lost commit, two syncs at once) is one
row; a cut connection or a restarting server rolls the batch back, and the batch is retried from
the cursor the server holds: nothing lost, nothing doubled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import apsw
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from capsule.fleet import schema
from capsule.fleet.sources import Source
from capsule.store import redact

BATCH_ROWS = 2000
RETRY_FOR_S = 60.0       # how long a sync waits for the fleet database to come back before giving up


class SyncError(Exception):
    """The fleet database stayed unreachable; the message says what was copied and that a re-run resumes."""


@dataclass
class Report:
    copied: dict[str, int] = field(default_factory=dict)      # table -> rows sent this run
    sources: int = 0
    retries: int = 0
    skipped: list[str] = field(default_factory=list)           # sources with nothing to read yet

    def as_dict(self) -> dict:
        return {"sources": self.sources, "copied": self.copied, "rows": sum(self.copied.values()),
                "retries": self.retries, "skipped": self.skipped}


def _open_local(path: Path) -> apsw.Connection:
    """Read-only, never creating anything but SQLite's own WAL index next to the file. On a volume
    mounted read-only (the sync sidecar's) that index cannot be made once the capsule closed its
    stores: with no WAL beside it the file is whole and is read as immutable."""
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    try:
        conn = apsw.Connection(f"file:{quote(str(path))}?mode=ro", flags=flags)
        conn.set_busy_timeout(10_000)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        return conn
    except apsw.CantOpenError:
        if Path(f"{path}-wal").exists():
            raise                        # a writer's log we cannot index: not safe to read around it
    return apsw.Connection(f"file:{quote(str(path))}?immutable=1", flags=flags)


def _insert(dialect: str):
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


class Syncer:
    def __init__(self, eng: sa.Engine, batch_rows: int = BATCH_ROWS, retry_for_s: float = RETRY_FOR_S):
        self.eng, self.batch_rows, self.retry_for_s = eng, batch_rows, retry_for_s
        self.dialect = eng.dialect.name
        self.report = Report(copied={s.name: 0 for s in schema.SYNCED})
        self.known: dict[tuple[str, str], int] = {}

    # ---- the fleet side -----------------------------------------------------------------
    def _retrying(self, what: str, fn):
        """Run fn(conn) in one transaction; on a lost connection wait and run it again (fresh
        transaction, fresh cursor read) until RETRY_FOR_S has passed."""
        deadline = time.monotonic() + self.retry_for_s
        pause = 0.2
        while True:
            try:
                with self.eng.begin() as conn:
                    return fn(conn)
            except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.InternalError) as exc:
                retry = isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError)) or exc.connection_invalidated
                if not retry or time.monotonic() > deadline:
                    raise SyncError(f"{what}: the fleet database did not answer for {self.retry_for_s:.0f} s "
                                    f"({type(exc.orig).__name__}: {str(exc.orig).strip()[:200]}); rows copied "
                                    f"so far are kept and the next sync resumes from there") from exc
                self.report.retries += 1
                time.sleep(pause)
                pause = min(pause * 2, 2.0)
            except sa.exc.DBAPIError as exc:   # a deadlock or serialisation failure between two syncs
                if "deadlock" not in str(exc.orig).lower() or time.monotonic() > deadline:
                    raise
                self.report.retries += 1
                time.sleep(pause)

    def _register(self, sources: list[Source]) -> None:
        """Every source's tags in one transaction (a pass over an idle fleet is two round trips)."""
        now = time.time()
        stmt = _insert(self.dialect)(schema.capsules)
        stmt = stmt.on_conflict_do_update(
            index_elements=["capsule"],
            set_={k: stmt.excluded[k] for k in ("container", "role", "host", "account", "source", "last_sync")})
        rows = [{**src.tags(), "first_sync": now, "last_sync": now} for src in sources]
        self._retrying("registering the capsules", lambda conn: conn.execute(stmt, rows))

    def _known(self) -> None:
        """Every cursor the fleet holds, read once a pass: a table whose newest local row is not past
        it is skipped without a transaction (the copy itself re-reads its cursor in its transaction)."""
        c = schema.sync_cursors.c
        self.known = dict(((r[0], r[1]), r[2]) for r in self._retrying(
            "reading the cursors", lambda conn: conn.execute(sa.select(c.capsule, c.tbl, c.position)).all()))

    def _cursor(self, conn, src: Source, table: str) -> int:
        c = schema.sync_cursors.c
        pos = conn.execute(sa.select(c.position).where(c.capsule == src.capsule, c.tbl == table)).scalar()
        return -1 if pos is None else pos

    def _store(self, conn, src: Source, synced: schema.Synced, rows: list[dict], last: int) -> None:
        table = synced.table
        ins = _insert(self.dialect)(table)
        params = None
        if self.dialect == "postgresql":
            ins = ins.from_select(*self._stage(conn, src, synced, rows))
        else:
            params = [{schema.SOURCE: src.capsule, **r} for r in rows]
        key = [schema.SOURCE, *synced.local_key]
        if synced.append_only:
            stmt = ins.on_conflict_do_nothing(index_elements=key)
        else:   # the newest local version of a row wins, whichever sync brings it
            stmt = ins.on_conflict_do_update(
                index_elements=key, set_={c: ins.excluded[c] for c in synced.columns if c not in key},
                where=sa.or_(table.c.seq.is_(None), table.c.seq < ins.excluded.seq))
        conn.execute(stmt) if params is None else conn.execute(stmt, params)
        cur = _insert(self.dialect)(schema.sync_cursors).values(capsule=src.capsule, tbl=synced.name, position=last)
        biggest = sa.func.greatest if self.dialect == "postgresql" else sa.func.max
        conn.execute(cur.on_conflict_do_update(
            index_elements=[schema.SOURCE, "tbl"],
            set_={"position": biggest(schema.sync_cursors.c.position, cur.excluded.position)}))

    @staticmethod
    def _stage(conn, src: Source, synced: schema.Synced, rows: list[dict]) -> tuple[list[str], sa.Select]:
        """PostgreSQL: COPY the batch into this session's temp table (emptied at commit) and insert
        from it in one statement with the same ON CONFLICT clause: about twice the rows/s of a
        pipelined executemany (benchmarks/bench_fleet_sync.py). In cursor order, as executemany was,
        so two syncs of one capsule lock its rows in the same order."""
        staging = f"_in_{synced.name}"
        cols = [schema.SOURCE, *synced.columns]
        conn.execute(sa.text(f"CREATE TEMP TABLE IF NOT EXISTS {staging} (LIKE {synced.name}) ON COMMIT DELETE ROWS"))
        quoted = ", ".join('"' + c + '"' for c in cols)     # `window` is a reserved word
        with conn.connection.driver_connection.cursor() as cur:
            with cur.copy(f"COPY {staging} ({quoted}) FROM STDIN") as copy:
                for r in rows:
                    copy.write_row([src.capsule, *(r[c] for c in synced.columns)])
        temp = sa.table(staging, *(sa.column(c) for c in cols))
        return cols, sa.select(*(temp.c[c] for c in cols)).order_by(temp.c[synced.cursor])

    # ---- the local side -----------------------------------------------------------------
    @staticmethod
    def _select(local: apsw.Connection, synced: schema.Synced) -> tuple[str, str] | None:
        """The SELECT for this table as the local file has it (older files lack newer columns: NULL),
        and the cursor expression (`rowid` for a usage store from before `seq`)."""
        have = {r[1] for r in local.execute(f"PRAGMA table_info({synced.name})")}
        if not have:
            return None
        cursor = synced.cursor if synced.cursor in have else "rowid"
        cols = [(c if c in have else ("rowid" if c == synced.cursor else "NULL")) + f" AS {c}" for c in synced.columns]
        return f"SELECT {', '.join(cols)} FROM {synced.name} WHERE {cursor} > ? ORDER BY {cursor} LIMIT ?", cursor

    def sync_source(self, src: Source) -> None:
        self.report.sources += 1
        readable = False
        for synced in schema.SYNCED:
            path = src.state / synced.db
            if not path.is_file():
                continue
            local = _open_local(path)
            try:
                query = self._select(local, synced)
                if query is None:
                    continue
                readable = True
                newest = local.execute(f"SELECT max({query[1]}) FROM {synced.name}").fetchone()[0]
                if newest is not None and newest > self.known.get((src.capsule, synced.name), -1):
                    self._copy(local, src, synced, query[0])
            finally:
                local.close()
        if not readable:
            self.report.skipped.append(src.where)

    def _copy(self, local: apsw.Connection, src: Source, synced: schema.Synced, sql: str) -> None:
        names = synced.columns
        at = names.index(synced.cursor)
        while True:
            def batch(conn):
                start = self._cursor(conn, src, synced.name)
                # redacted again on the way out: a row stored before a pattern existed (issue 31)
                rows = [redact.redacted_value(dict(zip(names, r))) for r in local.execute(sql, (start, self.batch_rows))]
                if rows:
                    self._store(conn, src, synced, rows, rows[-1][names[at]])
                return len(rows)

            n = self._retrying(f"copying {synced.name} of {src.where}", batch)
            self.report.copied[synced.name] = self.report.copied.get(synced.name, 0) + n
            if n < self.batch_rows:
                return


def sync(eng: sa.Engine, sources: list[Source], **kw) -> Report:
    syncer = Syncer(eng, **kw)
    if sources:
        syncer._register(sources)
        syncer._known()
    for src in sources:
        syncer.sync_source(src)
    return syncer.report
