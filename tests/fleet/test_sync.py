"""fleet sync on the real stores and a real PostgreSQL: every table (route events and quota samples
included), re-runs and concurrent syncs add nothing, a changed usage row is copied again, a state dir
from before `seq` and `intent` still syncs, a fleet database that is down exits 1 and the next run
resumes; the report's quota windows credit each role with its rises."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import apsw
import sqlalchemy as sa

from capsule.fleet import migrate, fleet_report, schema, sources, sync
from capsule.route import quota
from capsule.measure.ledger import Ledger, Row
from capsule.store.route_rows import RouteLog
from capsule.measure.usage import Call, UsageStore, record_usage

REPO = Path(__file__).resolve().parents[2]
STANDING = {"tokens": 100, "parts": {"test": 100}, "label": "cl100k_base"}


def _row(n: int) -> Row:
    return Row(scope="s1", command=f"seq 1 {n}", family="generic", transform="t", stream="stdout", mode="standard",
               applied=True, raw_tokens=100 + n, emitted_tokens=10, raw_bytes=400, emitted_bytes=40, exit_code=0,
               handle=None, duration_ms=1.0, token_label="cl100k_base")


def _fill(state: Path, n: int, util: float, resets: float = 5000.0) -> None:
    led = Ledger(state / "ledger.db")
    for i in range(n):
        led.record(_row(i))
    led.close()
    log = RouteLog(state / "ledger.db")
    log.record("boundary", session="s1", task_class="main", reason="new session")
    log.close()
    store = quota.QuotaStore(state / quota.QUOTA_DB)
    store.add([quota.Sample(ts=1000.0 + util, account="acct-x", regime="subscription", api="anthropic", window="5h",
                            utilization=util, resets_at=resets, session="s1")])
    store.close()
    usage = UsageStore(state / "usage.db")
    for i in range(n):
        record_usage("s1", "claude", "claude-sonnet-4-5", f"msg_{state.name}_{i}", input_tokens=5,
                     output_tokens=10 + i, ts=2000.0 + i, source="transcript", store=usage)
    usage.close()


def _count(eng, table) -> int:
    with eng.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()


def test_every_table_once_through_reruns_and_concurrent_syncs(pg_dsn, tmp_path):
    dirs = []
    for i, util in enumerate((0.1, 0.3)):
        d = tmp_path / f"c{i}"
        d.mkdir()
        _fill(d, 5 + i, util)
        dirs.append(d)
    eng = migrate.engine(pg_dsn)
    migrate.upgrade(eng)
    srcs = sources.from_dirs([str(dirs[0])], role="planner") + sources.from_dirs([str(dirs[1])], role="coder")
    errors = []

    def run():
        try:
            sync.sync(eng, srcs, batch_rows=2)       # small batches: many transactions interleave
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    want = {"emissions": 11, "calls": 11, "tools": 0, "sessions": 2, "route_events": 2, "quota_samples": 2}
    assert {s.name: _count(eng, s.table) for s in schema.SYNCED} == want
    again = sync.sync(eng, srcs)
    assert sum(again.copied.values()) == 0
    assert {s.name: _count(eng, s.table) for s in schema.SYNCED} == want

    # a usage row that changes locally (a proxy row replaces a transcript's) is copied again, once
    usage = UsageStore(dirs[0] / "usage.db")
    record_usage("s1", "claude", "claude-sonnet-4-5", "msg_c0_0", input_tokens=5, output_tokens=999, ts=2000.0,
                 source="proxy", store=usage)
    usage.close()
    assert sync.sync(eng, srcs).copied["calls"] == 1
    with eng.connect() as conn:
        out = conn.execute(sa.select(schema.calls.c.output_tokens, schema.calls.c.source)
                           .where(schema.calls.c.call_id == "msg_c0_0")).all()
    assert out == [(999, "proxy")]
    assert _count(eng, schema.calls) == 11

    data = fleet_report.build(eng, STANDING)
    (w,) = data["quota_windows"]
    assert w["utilization"] == 0.3 and w["by_role"] == {"coder": round(0.2 / 0.3, 4), "planner": round(0.1 / 0.3, 4)}
    per = {c["role"]: c for c in data["capsules"]}
    assert per["planner"]["total"]["emissions"] == 5 and per["coder"]["total"]["emissions"] == 6
    assert data["fleet"]["total"]["raw_tokens"] == sum(100 + i for i in range(5)) + sum(100 + i for i in range(6))
    eng.dispose()

    # the same dict through the doors: `fleet report --json`, `ctx report --dsn --json`, --html, text
    outs = []
    for args in (["fleet", "report", "--dsn", pg_dsn, "--json"], ["ctx", "report", "--dsn", pg_dsn, "--json"]):
        r = subprocess.run([sys.executable, "-m", "capsule", *args], capture_output=True, text=True, cwd=REPO,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(json.loads(r.stdout))
    assert outs[0]["fleet"] == outs[1]["fleet"] and outs[0]["fleet"]["total"]["emissions"] == 11
    page = tmp_path / "fleet.html"
    r = subprocess.run([sys.executable, "-m", "capsule", "fleet", "report", "--dsn", pg_dsn, "--html", str(page)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    # the page `ctx report --html` is (one renderer; its tables drawn in Chromium: tests/measure/test_report_figures.py)
    assert "default-src 'none'" in html and '"groups"' in html and '"planner"' in html and '"coder"' in html
    r = subprocess.run([sys.executable, "-m", "capsule", "fleet", "report", "--dsn", pg_dsn], capture_output=True,
                       text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0 and "FLEET" in r.stdout and "rate limit acct-x 5h: 30.0% used" in r.stdout


def test_a_state_dir_from_before_seq_and_intent_still_syncs(pg_dsn, tmp_path):
    state = tmp_path / "old"
    state.mkdir()
    conn = apsw.Connection(str(state / "ledger.db"))
    conn.execute("CREATE TABLE emissions(id INTEGER PRIMARY KEY, ts REAL NOT NULL, scope TEXT, command TEXT, "
                 "family TEXT, transform TEXT, stream TEXT, mode TEXT, applied INTEGER NOT NULL, raw_tokens INTEGER "
                 "NOT NULL, emitted_tokens INTEGER NOT NULL, raw_bytes INTEGER NOT NULL, emitted_bytes INTEGER NOT "
                 "NULL, exit_code INTEGER, handle TEXT, duration_ms REAL, token_label TEXT NOT NULL, manifest TEXT "
                 "NOT NULL, reports TEXT NOT NULL)")
    conn.execute("INSERT INTO emissions VALUES(1, 1.0, 's', 'ls', 'generic', 't', 'stdout', 'standard', 1, 50, 5, "
                 "200, 20, 0, NULL, 1.0, 'cl100k_base', '[]', '[]')")
    conn.close()
    usage = UsageStore(state / "usage.db")
    usage.close()
    conn = apsw.Connection(str(state / "usage.db"))     # the store as it was before `seq`
    conn.execute("DROP INDEX calls_seq; ALTER TABLE calls DROP COLUMN seq")
    conn.execute("INSERT INTO calls(agent, call_id, session_id, model, ts, input_tokens, cache_read_input_tokens, "
                 "cache_creation_5m, cache_creation_1h, output_tokens, source) VALUES('claude', 'msg_1', 's', 'm', "
                 "1.0, 1, 2, 3, 4, 5, 'transcript')")
    conn.close()
    eng = migrate.engine(pg_dsn)
    migrate.upgrade(eng)
    rep = sync.sync(eng, sources.from_dirs([str(state)]))
    assert rep.copied["emissions"] == 1 and rep.copied["calls"] == 1
    with eng.connect() as c:
        assert c.execute(sa.select(schema.emissions.c.intent, schema.emissions.c.raw_tokens)).all() == [(None, 50)]
    assert sum(sync.sync(eng, sources.from_dirs([str(state)])).copied.values()) == 0
    eng.dispose()


def test_a_fleet_database_that_is_down_exits_1_and_the_next_sync_resumes(pg_dsn, tmp_path):
    state = tmp_path / "c"
    state.mkdir()
    _fill(state, 3, 0.1)
    down = "postgresql://postgres@127.0.0.1:1/nowhere"     # nothing listens on port 1
    env = {**os.environ}
    r = subprocess.run([sys.executable, "-m", "capsule", "fleet", "sync", "--dsn", down, "--state", str(state),
                        "--retry-for", "1"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert r.returncode == 1 and "unreachable" in r.stderr and "127.0.0.1:1" in r.stderr
    r = subprocess.run([sys.executable, "-m", "capsule", "fleet", "sync", "--dsn", pg_dsn, "--state", str(state),
                        "--json"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert '"emissions": 3' in r.stdout


def test_a_named_container_keeps_its_rows_when_it_moves_host(pg_dsn, tmp_path):
    """A StatefulSet pod rescheduled on another node: same name and volume, another host tag."""
    state = tmp_path / "pod"
    state.mkdir()
    _fill(state, 4, 0.2)
    eng = migrate.engine(pg_dsn)
    migrate.upgrade(eng)
    first = sync.sync(eng, sources.from_dirs([str(state)], container="ns/coder-0", host="node-a"))
    moved = sync.sync(eng, sources.from_dirs([str(state)], container="ns/coder-0", host="node-b"))
    assert first.copied["emissions"] == 4 and sum(moved.copied.values()) == 0
    with eng.connect() as conn:
        assert conn.execute(sa.select(schema.capsules.c.host)).scalars().all() == ["node-b"]
    assert _count(eng, schema.emissions) == 4
    eng.dispose()


def test_bad_input_exits_2_naming_it(tmp_path):
    for args, word in ((["--dsn", "mysql://x/y", "--state", str(tmp_path)], "mysql"),
                       (["--dsn", "postgresql://x@127.0.0.1:1/y", "--state", str(tmp_path / "missing")], "missing"),
                       (["--dsn", "postgresql://x@127.0.0.1:1/y"], "--state")):
        r = subprocess.run([sys.executable, "-m", "capsule", "fleet", "sync", *args], capture_output=True, text=True,
                           cwd=REPO, timeout=120)
        assert r.returncode == 2 and word in r.stderr, (args, r.stderr)
