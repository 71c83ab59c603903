"""FLEET SYNC: copy new rows from each capsule's state (read-only) into the fleet database.

Per source and table, one batch at a time: read rows after the stored cursor from the local SQLite
(one read snapshot, so a capsule writing meanwhile is never seen half-done), then in ONE fleet
transaction insert them and move the cursor. Not responsible for finding sources
(capsule.fleet.sources) or reporting. Invariants: never writes to a state dir; a row is keyed by
(capsule, local key), so copying it twice (a retry after a lost commit, two syncs at once) is one
row; a cut connection or a restarting server rolls the batch back, and the batch is retried from
the cursor the server holds: nothing lost, nothing doubled. A state dir is written by the agent, so
each source is isolated: only a regular file (no symlink) owned by the state dir's owner or by us is
opened, every local read runs under a per-source time budget (an SQLite progress handler), and a
source that fails or runs out of time is reported in Report.failed and skipped; the others are copied.
"""

from __future__ import annotations

import os
import stat
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
SOURCE_BUDGET_S = 60.0   # one source's reads in one pass; a slow (or hostile: a recursive view) one is cut
PROGRESS_OPS = 10_000    # SQLite VM steps between two looks at the clock


class SyncError(Exception):
    """The fleet database stayed unreachable; the message says what was copied and that a re-run resumes."""


class SourceRefused(Exception):
    """A source file capsule will not open or read (a symlink, another owner, over its time budget)."""


@dataclass
class Report:
    copied: dict[str, int] = field(default_factory=dict)      # table -> rows sent this run
    sources: int = 0
    retries: int = 0
    skipped: list[str] = field(default_factory=list)           # sources with nothing to read yet
    failed: list[dict] = field(default_factory=list)           # {source, table, error}: reported, skipped

    def as_dict(self) -> dict:
        return {"sources": self.sources, "copied": self.copied, "rows": sum(self.copied.values()),
                "retries": self.retries, "skipped": self.skipped, "failed": self.failed}


def _check_file(path: Path, owners: set[int]) -> os.stat_result | None:
    """lstat: None when absent; a symlink, a non-regular file or a stranger's file is refused (the
    sync may run as root: a ledger.db -> /etc/shadow must never be opened). SQLite opens the -wal and
    -shm beside it too, so they are held to the same rule."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            if p == path:
                return None
            continue
        if not stat.S_ISREG(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise SourceRefused(f"{p.name} is {kind}: not opened")
        if st.st_uid not in owners:
            raise SourceRefused(f"{p.name} is owned by uid {st.st_uid}, not the state dir's owner: not opened")
    return os.lstat(path)


def _open_local(path: Path, deadline: float | None = None) -> apsw.Connection:
    """Read-only, never creating anything but SQLite's own WAL index next to the file. On a volume
    mounted read-only (the sync sidecar's) that index cannot be made once the capsule closed its
    stores: with no WAL beside it the file is whole and is read as immutable. With `deadline`
    (time.monotonic()), any statement still running then is interrupted (apsw.InterruptError)."""
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_NOFOLLOW
    try:
        conn = apsw.Connection(f"file:{quote(str(path))}?mode=ro", flags=flags)
        _budget(conn, deadline)
        conn.set_busy_timeout(10_000 if deadline is None else int(max(0.0, deadline - time.monotonic()) * 1000))
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        return conn
    except apsw.CantOpenError:
        if Path(f"{path}-wal").exists():
            raise                        # a writer's log we cannot index: not safe to read around it
    conn = apsw.Connection(f"file:{quote(str(path))}?immutable=1", flags=flags)
    _budget(conn, deadline)
    return conn


def _budget(conn: apsw.Connection, deadline: float | None) -> None:
    if deadline is not None:
        conn.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_OPS)


def _insert(dialect: str):
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


class Syncer:
    def __init__(self, eng: sa.Engine, batch_rows: int = BATCH_ROWS, retry_for_s: float = RETRY_FOR_S,
                 source_budget_s: float = SOURCE_BUDGET_S):
        self.eng, self.batch_rows, self.retry_for_s = eng, batch_rows, retry_for_s
        self.source_budget_s = source_budget_s
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
        """Each table of this source on its own: one that fails (a hostile or damaged file) or runs
        past the source's time budget is reported in report.failed and the next one is tried."""
        self.report.sources += 1
        readable = False
        deadline = time.monotonic() + self.source_budget_s
        try:
            owners = {os.lstat(src.state).st_uid, os.geteuid()}
        except OSError as exc:
            self._failed(src, "*", exc)
            return
        for synced in schema.SYNCED:
            path = src.state / synced.db
            try:
                if time.monotonic() > deadline:
                    raise SourceRefused(f"over its {self.source_budget_s:.0f} s budget before this table")
                if _check_file(path, owners) is None:
                    continue
                readable |= self._sync_table(src, synced, path, deadline)
            except SyncError:
                raise                     # the fleet database itself: every source would fail alike
            except Exception as exc:  # noqa: BLE001 - this source's file, not the fleet: report, go on
                self._failed(src, synced.name, exc)
                readable = True
        if not readable:
            self.report.skipped.append(src.where)

    def _failed(self, src: Source, table: str, exc: Exception) -> None:
        if isinstance(exc, apsw.InterruptError):
            why = f"over its {self.source_budget_s:.0f} s time budget"
        else:
            why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
        self.report.failed.append({"source": src.where, "capsule": src.capsule, "table": table, "error": why})

    def _sync_table(self, src: Source, synced: schema.Synced, path: Path, deadline: float) -> bool:
        before = os.lstat(path)
        local = _open_local(path, deadline)
        try:
            after = os.lstat(path)          # swapped for a symlink between the check and the open?
            if (after.st_ino, after.st_dev) != (before.st_ino, before.st_dev):
                raise SourceRefused(f"{path.name} changed while it was opened: not read")
            query = self._select(local, synced)
            if query is None:
                return False
            newest = local.execute(f"SELECT max({query[1]}) FROM {synced.name}").fetchone()[0]
            if newest is not None and not isinstance(newest, int):
                raise SourceRefused(f"{synced.name}.{query[1]} holds {type(newest).__name__} values, not integers")
            if newest is not None and newest > self.known.get((src.capsule, synced.name), -1):
                self._copy(local, src, synced, query[0])
            return True
        finally:
            local.close()

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
