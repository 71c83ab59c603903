"""One store object is shared by the proxy's worker threads (anyio.to_thread runs the route's
on_response on any of them), so two threads may write through one apsw connection at once. SQLite
has one transaction per connection: without a lock, the second BEGIN IMMEDIATE failed with "cannot
start a transaction within a transaction" and its quota samples were dropped (CI, stop 39: 17 of
19 samples in the real-Claude route test)."""

from __future__ import annotations

import threading

from capsule.store.quota_rows import QuotaStore, Sample


def test_many_threads_adding_through_one_store_lose_no_sample(tmp_path):
    store = QuotaStore(tmp_path / "quota.db")
    threads, per_thread = 8, 40
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def add(k: int) -> None:
        start.wait()
        for i in range(per_thread):
            try:
                store.add([Sample(ts=1_000.0 + k * per_thread + i, account="a", regime="subscription",
                                  api="anthropic", window="5h", utilization=0.5)])
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    workers = [threading.Thread(target=add, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert len(store.samples()) == threads * per_thread


def test_a_writer_stuck_behind_another_thread_fails_as_a_busy_wait_would(tmp_path, monkeypatch):
    import apsw
    import pytest

    from capsule.store import sqlite

    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 200)
    store = QuotaStore(tmp_path / "quota.db")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with sqlite.write(store.conn):
            holding.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    holding.wait(10)
    try:
        with pytest.raises(apsw.BusyError):
            store.add([Sample(ts=1.0, account="a", regime="subscription", api="anthropic", window="5h",
                              utilization=0.5)])
    finally:
        release.set()
        t.join()
    store.add([Sample(ts=2.0, account="a", regime="subscription", api="anthropic", window="5h", utilization=0.5)])
    assert [s.ts for s in store.samples()] == [2.0]     # the lock was given back; nothing half-written
