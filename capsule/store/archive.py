"""ARCHIVE: the CCR store — every original, byte-exact, under its blake3 handle.

Not responsible for deciding what is lossy (the pipeline does) or for display.
Invariant (INV-5): get(put(data)) == data for every byte string within retention; a handle
is the first 24 hex characters of blake3(original). Safe under many concurrent writers (WAL).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from io import BufferedIOBase
import tempfile

import blake3

from capsule.ground import paths
from capsule.ground import switches
from capsule.store import redact
from capsule.store import finisher, sqlite
from capsule.store.sqlite import connect

HANDLE_LEN = 24
DEFAULT_RETENTION_S = 24 * 3600   # the floor the spec asks for is 30 minutes
MIN_RETENTION_S = 30 * 60
CHUNK = 1 << 20
STORED_CHUNK = 64 << 20           # SQLite caps one blob near 1 GB: large originals are stored in parts
FTS_MAX_BYTES = 4 << 20           # larger originals are stored but not full-text indexed

SCHEMA = """
CREATE TABLE IF NOT EXISTS ccr_entries(
  hash TEXT PRIMARY KEY,
  original BLOB NOT NULL,
  size INTEGER NOT NULL,
  created_at REAL NOT NULL,
  expires_at REAL NOT NULL,
  command TEXT
);
CREATE INDEX IF NOT EXISTS ccr_expiry ON ccr_entries(expires_at);
CREATE TABLE IF NOT EXISTS ccr_chunks(
  hash TEXT NOT NULL,
  seq INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(hash, seq)
);
CREATE VIRTUAL TABLE IF NOT EXISTS ccr_fts USING fts5(hash UNINDEXED, body);
"""


class UnknownHandle(KeyError):
    """The handle was never stored, or its retention has passed."""


def handle_of(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()[:HANDLE_LEN]


def retention_seconds() -> int:
    raw = os.environ.get(switches.RETENTION)
    if not raw:
        return DEFAULT_RETENTION_S
    try:
        return max(int(raw), 1)
    except ValueError:
        return DEFAULT_RETENTION_S


class Archive:
    def __init__(self, path: Path | None = None, retention_s: int | None = None, readonly: bool = False,
                 busy_timeout_ms: int = sqlite.BUSY_TIMEOUT_MS):
        """readonly=True (readers such as expand): a read-only state dir still serves its originals.
        busy_timeout_ms: how long a write waits for another writer (the engine's output path
        passes a short budget, so a held lock means raw output, not a stalled agent)."""
        self.path = Path(path) if path else paths.archive_path()
        self.retention_s = retention_s if retention_s is not None else retention_seconds()
        self.conn = sqlite.connect_read(self.path) if readonly else connect(self.path, busy_timeout_ms)
        sqlite.ensure_schema(self.conn, self.path, SCHEMA)
        # defer_index: a new original is stored at once, its full-text row waits for index_pending()
        # (the engine calls it after its reply: indexing is most of a put, and nothing waits on it)
        self.defer_index = False
        self._unindexed: list[tuple[str, bytes]] = []

    def put(self, data: bytes, command: str | None = None) -> str:
        """Store `data` under the handle of `data` itself; what is stored has its secrets redacted
        (store/redact.py; JACKIN_CTX_NO_REDACT keeps them)."""
        handle = handle_of(data)
        if redact.enabled():
            data, _ = redact.redact_bytes(data)
            command = redact.redacted(command)
        now = time.time()
        with sqlite.write(self.conn):
            self._purge(now)
            self.conn.execute(
                "INSERT OR IGNORE INTO ccr_entries(hash, original, size, created_at, expires_at, command) "
                "VALUES(?,?,?,?,?,?)", (handle, data, len(data), now, now + self.retention_s, command))
            if not self.conn.changes():       # stored before: its text is indexed (or too large to be)
                self.conn.execute("UPDATE ccr_entries SET expires_at=? WHERE hash=?", (now + self.retention_s, handle))
            elif len(data) <= FTS_MAX_BYTES:
                # A new entry has no index row (put and _purge change both in one transaction):
                # asking the index would scan it whole (`hash` is not an indexed column).
                if self.defer_index:
                    self._unindexed.append((handle, data))
                else:
                    self._index(handle, data)
        return handle

    def has_unindexed(self) -> bool:
        return bool(self._unindexed)

    def take_unindexed(self) -> list[tuple[str, bytes]]:
        """The (handle, original) pairs still owed a full-text row, handed over and forgotten here."""
        out, self._unindexed = self._unindexed, []
        return out

    def requeue_unindexed(self, items: list[tuple[str, bytes]]) -> None:
        self._unindexed.extend(items)

    def index_pending(self) -> None:
        """Write the full-text rows of the new originals put() stored with defer_index on."""
        while self._unindexed:
            handle, data = self._unindexed.pop(0)
            with sqlite.write(self.conn):
                if self.conn.execute("SELECT 1 FROM ccr_entries WHERE hash=?", (handle,)).fetchone():
                    self._index(handle, data)

    def _index(self, handle: str, data: bytes) -> None:
        self.conn.execute("INSERT INTO ccr_fts(hash, body) VALUES(?,?)", (handle, data.decode("utf-8", "replace")))

    def put_file(self, f: BufferedIOBase, size: int, handle: str, command: str | None = None) -> str:
        """Store a large original in parts, reading it in chunks; `handle` was hashed while spooling."""
        if redact.enabled():
            f, size = _redacted_spool(f)
            command = redact.redacted(command)
        now = time.time()
        with sqlite.write(self.conn):
            self._purge(now)
            exists = self.conn.execute("SELECT 1 FROM ccr_entries WHERE hash=?", (handle,)).fetchone()
            if exists:
                self.conn.execute("UPDATE ccr_entries SET expires_at=? WHERE hash=?", (now + self.retention_s, handle))
                return handle
            # An empty `original` marks a chunked entry; `size` is the true length.
            self.conn.execute(
                "INSERT INTO ccr_entries(hash, original, size, created_at, expires_at, command) "
                "VALUES(?, x'', ?, ?, ?, ?)", (handle, size, now, now + self.retention_s, command))
            f.seek(0)
            seq = 0
            while True:
                self.conn.execute("INSERT INTO ccr_chunks(hash, seq, data) VALUES(?, ?, zeroblob(?))",
                                  (handle, seq, min(STORED_CHUNK, size - seq * STORED_CHUNK)))
                rowid = self.conn.last_insert_rowid()
                with self.conn.blob_open("main", "ccr_chunks", "data", rowid, True) as blob:
                    left = blob.length()
                    while left and (chunk := f.read(min(CHUNK, left))):
                        blob.write(chunk)
                        left -= len(chunk)
                seq += 1
                if seq * STORED_CHUNK >= size:
                    break
        return handle

    def get(self, handle: str) -> bytes:
        return b"".join(self.iter_chunks(handle))

    def iter_chunks(self, handle: str):
        """The original in pieces of at most 1 MiB, in order: constant memory for any size."""
        handle = normalise(handle)
        row = self.conn.execute(
            "SELECT rowid, size, expires_at, length(original) FROM ccr_entries WHERE hash=?", (handle,)).fetchone()
        if row is None or row[2] < time.time():
            raise UnknownHandle(handle)
        rowid, size, _, stored = row
        if stored == size:
            parts = [("ccr_entries", "original", rowid)]
        else:
            parts = [("ccr_chunks", "data", r[0]) for r in self.conn.execute(
                "SELECT rowid FROM ccr_chunks WHERE hash=? ORDER BY seq", (handle,))]
        return self._read_parts(parts)

    def _read_parts(self, parts):
        for table, column, rowid in parts:
            with self.conn.blob_open("main", table, column, rowid, False) as blob:
                while chunk := blob.read(CHUNK):
                    yield chunk

    def size_of(self, handle: str) -> int:
        row = self.conn.execute("SELECT size, expires_at FROM ccr_entries WHERE hash=?", (normalise(handle),)).fetchone()
        if row is None or row[1] < time.time():
            raise UnknownHandle(normalise(handle))
        return row[0]

    def search(self, query: str, limit: int = 10) -> list[str]:
        finisher.wait(self.path.parent)     # full-text rows of `ctx run`s that exited may still be coming
        rows = self.conn.execute(
            "SELECT f.hash FROM ccr_fts f JOIN ccr_entries e ON e.hash=f.hash "
            "WHERE ccr_fts MATCH ? AND e.expires_at >= ? LIMIT ?", (query, time.time(), limit))
        return [r[0] for r in rows]

    def stats(self) -> dict:
        count, total = self.conn.execute("SELECT count(*), coalesce(sum(size),0) FROM ccr_entries").fetchone()
        return {"entries": count, "bytes": total, "file_bytes": self.path.stat().st_size,
                "retention_s": self.retention_s}

    def integrity(self) -> str:
        return self.conn.execute("PRAGMA quick_check").fetchone()[0]

    def _purge(self, now: float) -> None:
        expired = [r[0] for r in self.conn.execute("SELECT hash FROM ccr_entries WHERE expires_at < ? LIMIT 100", (now,))]
        for h in expired:
            self.conn.execute("DELETE FROM ccr_fts WHERE hash=?", (h,))
            self.conn.execute("DELETE FROM ccr_chunks WHERE hash=?", (h,))
            self.conn.execute("DELETE FROM ccr_entries WHERE hash=?", (h,))

    def close(self) -> None:
        self.conn.close()


def _redacted_spool(f: BufferedIOBase) -> tuple[BufferedIOBase, int]:
    """A large original with its secrets redacted, in an unnamed temporary file (0600, gone on
    close): read in 1 MiB pieces cut after a newline, a piece holding a private key's start read on
    to its end (a key never spans two pieces; at most 1 MiB more is joined)."""
    f.seek(0)
    out = tempfile.TemporaryFile()
    carry = b""
    while True:
        chunk = f.read(CHUNK)
        data = carry + chunk
        if not chunk:
            if data:
                out.write(redact.redact_bytes(data)[0])
            break
        cut = data.rfind(b"\n") + 1
        begin = data.rfind(b"-----BEGIN ")
        if begin >= 0 and data.find(b"-----END ", begin) < 0 and len(data) < 2 * CHUNK:
            cut = begin if begin > 0 else 0      # wait for the key's end (or the size bound)
        if cut <= 0 and len(data) < 2 * CHUNK:
            carry = data
            continue
        cut = cut or len(data)
        out.write(redact.redact_bytes(data[:cut])[0])
        carry = data[cut:]
    size = out.tell()
    out.seek(0)
    return out, size


def normalise(handle: str) -> str:
    """Accept `HASH`, `<<ccr:HASH>>`, `'<<ccr:HASH>>'` (the footer's quoted form) or `ccr:HASH`."""
    h = handle.strip()
    if len(h) > 1 and h[0] == h[-1] and h[0] in "'\"":
        h = h[1:-1].strip()
    if h.startswith("<<") and h.endswith(">>"):
        h = h[2:-2]
    if h.startswith("ccr:"):
        h = h[4:]
    return h.lower()
