"""SQLite through apsw for every capsule store: WAL, a generous busy wait, immediate writes.

Not responsible for any schema. Invariant: many processes may write one database at once
without "database is locked": every write transaction starts with BEGIN IMMEDIATE, so it
queues on the busy handler instead of failing on a read-to-write lock upgrade.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import apsw

BUSY_TIMEOUT_MS = 60_000


def connect(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


@contextmanager
def write(conn: apsw.Connection):
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")
