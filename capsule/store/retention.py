"""Retention for the stores that would otherwise only grow: ledger.db (emissions, route events),
usage.db, quota.db, proxy.db.

Not responsible for the archive (its own TTL) or for any schema. Settings are data
(data/retention.toml). Invariant: a pass deletes at most batch_rows per table, waits at most busy_ms
for a lock (a busy store is skipped, never waited on), never raises, and removes a proxy
conversation's rewrites only all together, once its newest one is older than the age limit.
"""

from __future__ import annotations

import os
import time
import tomllib
from pathlib import Path

from capsule.ground import paths
from capsule.store import sqlite

DATA = Path(__file__).parent / "data" / "retention.toml"


def settings() -> dict:
    return tomllib.loads(DATA.read_text(encoding="utf-8"))


def used_mb(conn) -> float:
    pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
    free = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
    size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    return (pages - free) * size / (1 << 20)


def prune(state_dir, name: str, now: float | None = None, conf: dict | None = None) -> dict:
    """One pass over one store; {"deleted": n, "used_mb": x} or {"skipped": why}."""
    conf = conf or settings()
    store = conf["stores"][name]
    path = Path(state_dir) / store["file"]
    if not path.exists():
        return {"skipped": "no store yet"}
    now = time.time() if now is None else now
    cutoff = now - float(store["max_age_days"]) * 86400
    batch = int(conf["batch_rows"])
    try:
        conn = sqlite.connect(path, busy_timeout_ms=int(conf["busy_ms"]))
    except sqlite.StoreError as exc:
        return {"skipped": str(exc)}
    deleted = 0
    try:
        if "conversations" in store:
            deleted = _conversations(conn, store, cutoff, batch)
        else:
            tables = [(t, c) for t, c in store["tables"] if _has(conn, t)]   # route_events: once routing ran
            for table, col in tables:
                deleted += _delete(conn, f'DELETE FROM "{table}" WHERE rowid IN (SELECT rowid FROM "{table}" '
                                         f'WHERE "{col}" < ? LIMIT ?)', (cutoff, batch))
            for table, col in tables:      # over the size: the oldest go, a batch at most
                if used_mb(conn) <= float(store["max_mb"]):
                    break
                deleted += _delete(conn, f'DELETE FROM "{table}" WHERE rowid IN (SELECT rowid FROM "{table}" '
                                         f'WHERE "{col}" IS NOT NULL ORDER BY "{col}" LIMIT ?)', (batch,))
        return {"deleted": deleted, "used_mb": round(used_mb(conn), 2)}
    except Exception as exc:  # noqa: BLE001 - busy, full or damaged: the next pass tries again
        return {"skipped": f"{type(exc).__name__}: {exc}", "deleted": deleted}
    finally:
        conn.close()


def _has(conn, table: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchall())


def _delete(conn, sql: str, args: tuple) -> int:
    with sqlite.write(conn):
        conn.execute(sql, args)
        return conn.changes()


def _conversations(conn, store: dict, cutoff: float, batch: int) -> int:
    table, conv, col = store["conversations"]
    old = f'SELECT "{conv}" FROM "{table}" GROUP BY "{conv}" HAVING max("{col}") < ? LIMIT ?'
    deleted = _delete(conn, f'DELETE FROM "{table}" WHERE "{conv}" IN ({old})', (cutoff, max(batch // 100, 1)))
    if used_mb(conn) > float(store["max_mb"]):     # the least recently used conversation goes whole
        oldest = f'SELECT "{conv}" FROM "{table}" GROUP BY "{conv}" ORDER BY max("{col}") LIMIT 1'
        deleted += _delete(conn, f'DELETE FROM "{table}" WHERE "{conv}" IN ({oldest})', ())
    return deleted


def prune_all(state_dir, min_interval_s: float | None = None, now: float | None = None) -> dict:
    """Every store; with min_interval_s, a store pruned less than that long ago (its stamp in
    cache/) is left for later. Never raises."""
    try:
        conf = settings()
    except Exception as exc:  # noqa: BLE001
        return {"error": str(exc)}
    out = {}
    for name in conf["stores"]:
        stamp = Path(state_dir) / "cache" / f"retention-{name}.stamp"
        try:
            if min_interval_s is not None and time.time() - stamp.stat().st_mtime < min_interval_s:
                continue
        except OSError:
            pass
        out[name] = prune(state_dir, name, now, conf)
        try:
            paths.private_dir(stamp.parent)
            os.close(paths.open_private(stamp))
            os.utime(stamp)
        except OSError:
            pass
    return out


def describe(state_dir) -> dict:
    """For doctor: each store's limits, its size, and when it was last pruned."""
    try:
        conf = settings()
    except Exception as exc:  # noqa: BLE001
        return {"error": str(exc)}
    out = {}
    for name, store in conf["stores"].items():
        stamp = Path(state_dir) / "cache" / f"retention-{name}.stamp"
        try:
            last = stamp.stat().st_mtime
        except OSError:
            last = None
        out[name] = {"max_age_days": store["max_age_days"], "max_mb": store["max_mb"], "last_pruned": last}
    return out
