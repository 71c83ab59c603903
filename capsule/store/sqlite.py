"""SQLite through apsw for every capsule store: WAL, a generous busy wait, immediate writes.

Not responsible for any schema. Invariant: many processes may write one database at once
without "database is locked": every write transaction starts with BEGIN IMMEDIATE, so it
queues on the busy handler instead of failing on a read-to-write lock upgrade; threads sharing
one connection queue on its lock (SQLite has one transaction per connection). A database that
cannot be opened raises StoreError, whose message names the file, the problem and the fix; a
reader (connect_read) still gets a read-only connection when the state dir is read-only.
"""

from __future__ import annotations

import errno
import os
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import apsw

from capsule.ground import paths

BUSY_TIMEOUT_MS = 60_000
BUSY = (apsw.BusyError, apsw.LockedError)    # another writer held the lock past the busy wait


class StoreError(Exception):
    """A state database that cannot be used; the message names the file and the fix."""


def describe(path: Path, exc: BaseException) -> str:
    """One line: which file, what is wrong with it, what to do."""
    name = type(exc).__name__
    if isinstance(exc, (apsw.NotADBError, apsw.CorruptError)):
        return (f"{path} is not a readable capsule database ({name}: {exc}); move it aside and capsule "
                f"starts a new one (what it held is lost)")
    if isinstance(exc, (apsw.ReadOnlyError, apsw.CantOpenError, apsw.PermissionsError, PermissionError)):
        return (f"{path} cannot be opened for writing ({name}: {exc}); the state dir is read-only or "
                f"not ours: set JACKIN_CTX_STATE_DIR to a writable directory")
    if isinstance(exc, BUSY):
        return f"{path} is locked by another process ({name}); retry when it finishes"
    if is_full(exc):
        return f"{path}: the disk is full ({name}); free space and retry"
    return f"{path}: {name}: {exc}"


def is_full(exc: BaseException | None) -> bool:
    """Did this error (or one it was raised from) come from a full disk?"""
    while exc is not None:
        if isinstance(exc, apsw.FullError) or getattr(exc, "errno", None) == errno.ENOSPC:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _owner_only(path: Path) -> None:
    """SQLite creates a database 0644 (less the umask) and gives its -wal/-shm/-journal the
    database's own mode: a file made 0600 first, or tightened, keeps all of them owner-only."""
    try:
        os.close(paths.open_private(path, os.O_RDWR | os.O_CREAT))
    except OSError:
        pass        # a read-only state dir: SQLite reports it (connect_read falls back)
    for suffix in ("", "-wal", "-shm", "-journal"):
        paths.tighten(f"{path}{suffix}")


def connect(path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> apsw.Connection:
    if str(path) != ":memory:":
        _owner_only(Path(path))
    try:
        conn = apsw.Connection(str(path))
        conn.set_busy_timeout(busy_timeout_ms)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except (apsw.Error, OSError) as exc:
        raise StoreError(describe(Path(path), exc)) from exc
    return conn


def connect_read(path: Path) -> apsw.Connection:
    """A connection for reading only: the normal one, else read-only, else immutable (a read-only
    state dir where SQLite cannot create the WAL's shared-memory file)."""
    try:
        return connect(path)
    except StoreError as first:
        if not isinstance(first.__cause__, (apsw.ReadOnlyError, apsw.CantOpenError, apsw.PermissionsError)):
            raise
        if not Path(path).is_file():
            raise
        error = first
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    for query in ("mode=ro", "immutable=1"):
        try:
            conn = apsw.Connection(f"file:{quote(str(path))}?{query}", flags=flags)
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
            return conn
        except apsw.Error as exc:
            error = StoreError(describe(Path(path), exc))
            error.__cause__ = exc
    raise error


def ensure_schema(conn: apsw.Connection, path: Path, schema: str, then=None) -> None:
    """Create the schema (and run `then(conn)` in the same transaction) unless the connection
    is read-only, when the schema is whatever the file already holds."""
    if conn.readonly("main"):
        return
    try:
        with write(conn):
            conn.execute(schema)
            if then is not None:
                then(conn)
    except apsw.Error as exc:
        raise StoreError(describe(Path(path), exc)) from exc


# One transaction per connection: a store object shared by threads (the proxy's workers) takes
# its connection's lock, or the second BEGIN fails "within a transaction" and its rows are lost.
_write_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_write_locks_guard = threading.Lock()


def _write_lock(conn: apsw.Connection) -> threading.RLock:
    with _write_locks_guard:
        lock = _write_locks.get(conn)
        if lock is None:
            lock = _write_locks[conn] = threading.RLock()
        return lock


@contextmanager
def write(conn: apsw.Connection):
    lock = _write_lock(conn)
    # bounded like SQLite's own busy wait: a writer stuck behind another fails as it would there
    if not lock.acquire(timeout=BUSY_TIMEOUT_MS / 1000):
        raise apsw.BusyError("another thread held this connection's write past the busy wait")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")
    finally:
        lock.release()
