"""Fleet sync throughput (rows/s) and lag with 32 writers, into a real PostgreSQL.

32 writer processes each append ledger rows to their own state dir through the real store
(capsule.measure.ledger) at --rate rows/s for --seconds; meanwhile one `fleet sync` loop copies all
32 into a fresh database. Prints per-run: rows written and copied, passes, copy throughput (rows
per second of sync time), lag (a row's write time to the end of the pass that copied it: p50, p95,
max) and the catch-up time after the writers stop; then the same state copied at once into a second
fresh database with nothing else running (bulk rows/s: a first sync of an existing fleet).

    eval "$(sudo scripts/setup-postgres.sh start)"      # or pass --dsn postgresql://…
    python benchmarks/bench_fleet_sync.py [--writers 32] [--seconds 10] [--rate 40] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from capsule.fleet import migrate, schema, sources, sync  # noqa: E402

WRITER = """
import sys, time
from capsule.measure.ledger import Ledger, Row
led = Ledger(sys.argv[1] + "/ledger.db")
rate, until = float(sys.argv[2]), float(sys.argv[3])
n = 0
start = time.time()
while time.time() < until:
    led.record(Row(scope="bench", command=f"seq 1 {n}", family="generic", transform="bench", stream="stdout",
                   mode="standard", applied=True, raw_tokens=1000 + n, emitted_tokens=200, raw_bytes=4000,
                   emitted_bytes=800, exit_code=0, handle=None, duration_ms=1.0, token_label="cl100k_base"))
    n += 1
    time.sleep(max(0.0, start + n / rate - time.time()))
print(n)
"""


def _positions(eng) -> dict[str, int]:
    c = schema.sync_cursors.c
    with eng.connect() as conn:
        return dict(conn.execute(sa.select(c.capsule, c.position).where(c.tbl == "emissions")).all())


def _new_ts(eng, before: dict, after: dict) -> list[float]:
    e = schema.emissions.c
    out: list[float] = []
    with eng.connect() as conn:
        for cap, pos in after.items():
            if pos > before.get(cap, -1):
                out += conn.execute(sa.select(e.ts).where(e.capsule == cap, e.id > before.get(cap, -1),
                                                          e.id <= pos)).scalars().all()
    return out


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=40.0, help="rows per second per writer")
    ap.add_argument("--dsn", default=os.environ.get("CAPSULE_TEST_PG_DSN"))
    args = ap.parse_args()
    if not args.dsn:
        print("no --dsn and no CAPSULE_TEST_PG_DSN: eval \"$(scripts/setup-postgres.sh start)\" first", file=sys.stderr)
        return 2
    db = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
    dsn = args.dsn.rpartition("/")[0] + "/" + db
    eng = migrate.engine(dsn)
    try:
        migrate.upgrade(eng)
        with tempfile.TemporaryDirectory() as tmp:
            dirs = [Path(tmp) / f"w{i:02d}" for i in range(args.writers)]
            for d in dirs:
                d.mkdir()
            until = time.time() + 2.0 + args.seconds       # the writers start together
            procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(d), str(args.rate), str(until)],
                                      stdout=subprocess.PIPE, cwd=ROOT) for d in dirs]
            while not all((d / "ledger.db").exists() for d in dirs):
                time.sleep(0.05)
            srcs = sources.from_dirs([str(d) for d in dirs], role="bench")
            lags: list[float] = []
            copied = passes = 0
            busy = 0.0
            catch_up = None
            stopped_at = None
            while True:
                before = _positions(eng)
                t0 = time.perf_counter()
                report = sync.sync(eng, srcs)
                busy += time.perf_counter() - t0
                end = time.time()
                passes += 1
                copied += report.copied.get("emissions", 0)
                lags += [end - ts for ts in _new_ts(eng, before, _positions(eng))]
                if stopped_at is None and all(p.poll() is not None for p in procs):
                    stopped_at = time.time()
                    continue          # one more pass copies whatever came in before they stopped
                if stopped_at is not None and report.copied.get("emissions", 0) == 0:
                    catch_up = end - stopped_at
                    break
            written = sum(int(p.stdout.read() or 0) for p in procs)
            bulk_db = db + "_bulk"
            with psycopg.connect(args.dsn, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{bulk_db}"')
            bulk = migrate.engine(args.dsn.rpartition("/")[0] + "/" + bulk_db)
            migrate.upgrade(bulk)
            t0 = time.perf_counter()
            bulk_rows = sum(sync.sync(bulk, srcs).copied.values())
            bulk_s = time.perf_counter() - t0
            bulk.dispose()
    finally:
        eng.dispose()
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'DROP DATABASE IF EXISTS "{db}_bulk" WITH (FORCE)')
    rows = [("writers", f"{args.writers}"), ("write rate (rows/s, all writers)", f"{args.writers * args.rate:.0f}"),
            ("seconds writing", f"{args.seconds:.0f}"), ("rows written", f"{written}"),
            ("rows copied", f"{copied}"), ("lost / doubled", f"{written - copied} / 0 (keyed)"),
            ("sync passes", f"{passes}"), ("copy throughput (rows/s of sync time)", f"{copied / busy:,.0f}"),
            ("lag p50 (s)", f"{statistics.median(lags) if lags else 0:.2f}"), ("lag p95 (s)", f"{_pct(lags, 0.95):.2f}"),
            ("lag max (s)", f"{max(lags) if lags else 0:.2f}"), ("catch-up after writers stop (s)", f"{catch_up:.2f}"),
            ("bulk first sync: rows", f"{bulk_rows}"), ("bulk first sync: rows/s", f"{bulk_rows / bulk_s:,.0f}")]
    width = max(len(k) for k, _ in rows)
    print(f"{'fleet sync, ' + str(args.writers) + ' writers':<{width}}  value")
    print("-" * (width + 12))
    for k, v in rows:
        print(f"{k:<{width}}  {v:>10}")
    return 0 if written == copied else 1


if __name__ == "__main__":
    sys.exit(main())
