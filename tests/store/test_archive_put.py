"""Archive.put on the agent's path (issue 11, warm observe): a new original gets one index row, a
stored one gets its retention renewed and no second row, and no put reads the full-text index
(its `hash` column is not indexed: asking it scanned every stored output on every put)."""

from __future__ import annotations

import time

from capsule.store.archive import Archive


def test_put_indexes_a_new_original_once_and_renews_a_stored_one(tmp_path):
    archive = Archive(tmp_path / "archive.db", retention_s=3600)
    first = archive.put(b"error: first output\n", "make")
    second = archive.put(b"warning: second output\n", "make")
    (expires,) = archive.conn.execute("SELECT expires_at FROM ccr_entries WHERE hash=?", (first,)).fetchone()
    time.sleep(0.01)
    assert archive.put(b"error: first output\n", "make again") == first
    rows = archive.conn.execute("SELECT hash FROM ccr_fts ORDER BY hash").fetchall()
    assert sorted(r[0] for r in rows) == sorted([first, second])
    (renewed,) = archive.conn.execute("SELECT expires_at FROM ccr_entries WHERE hash=?", (first,)).fetchone()
    assert renewed > expires
    assert archive.search("first") == [first]
    assert archive.get(first) == b"error: first output\n"


def test_put_never_reads_the_full_text_index(tmp_path):
    archive = Archive(tmp_path / "archive.db", retention_s=3600)
    for i in range(3):
        archive.put(f"line {i}\n".encode() * 50, "seq")
    statements: list[str] = []

    def trace(cursor, sql, bindings):
        statements.append(sql)
        return True

    archive.conn.exec_trace = trace
    archive.put(b"a new output\n" * 50, "seq")      # a new entry
    archive.put(b"line 1\n" * 50, "seq")            # a stored one
    archive.conn.exec_trace = None
    reads = [s for s in statements if "ccr_fts" in s and not s.lstrip().upper().startswith("INSERT")]
    assert statements and reads == [], reads
