"""32 capsules, one PostgreSQL: real `capsule` processes write their own state dirs while eight
`capsule fleet sync --every` loops (two per role, overlapping) copy them and the server is restarted
three times; then every local row is in PostgreSQL exactly once and the fleet report's totals are
the sums of each capsule's own `ctx report --json` and `ctx gain --json`."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import sqlalchemy as sa

from capsule.fleet import migrate, schema
from tests.fleet.pg import restart_postgres

CAPSULES = 32
ROLES = ("planner", "coder", "reviewer", "tester")
ITERATIONS = 2
WRITER = Path(__file__).with_name("writer.py")
REPO = Path(__file__).resolve().parents[2]


def _capsule(*args, env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "capsule", *args], env={**os.environ, **(env or {})},
                            cwd=REPO, **kw)


def local_rows(state: Path, synced: schema.Synced) -> set[tuple]:
    path = state / synced.db
    if not path.is_file():
        return set()
    conn = apsw.Connection(str(path))
    rows = {tuple(r) for r in conn.execute(f"SELECT {', '.join(synced.columns)} FROM {synced.name}")}
    conn.close()
    return rows


def fleet_rows(eng, capsule: str, synced: schema.Synced) -> list[tuple]:
    t = synced.table
    with eng.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(*(t.c[c] for c in synced.columns)).where(t.c.capsule == capsule))]


def test_32_capsules_three_restarts_nothing_lost_nothing_doubled(pg_dsn, tmp_path):
    caps = []
    for i in range(CAPSULES):
        d = tmp_path / f"cap{i:02d}"
        (d / "state").mkdir(parents=True)
        (d / "claude").mkdir()
        caps.append({"tag": f"cap{i:02d}", "state": d / "state", "claude": d / "claude", "role": ROLES[i % 4],
                     "account": "acct-a" if i % 4 < 2 else "acct-b"})
    eng = migrate.engine(pg_dsn)
    migrate.upgrade(eng)

    writers = [subprocess.Popen([sys.executable, str(WRITER), str(c["state"]), str(c["claude"]), str(ITERATIONS),
                                 c["tag"]], cwd=REPO, stderr=subprocess.PIPE) for c in caps]
    syncs = []
    for role in ROLES:
        group = [c for c in caps if c["role"] == role]
        state_args = [a for c in group for a in ("--state", str(c["state"]))]
        for _ in range(2):   # two syncs of the same capsules at once
            syncs.append(_capsule("fleet", "sync", "--dsn", pg_dsn, *state_args, "--role", role, "--account",
                                  group[0]["account"], "--every", "0.3", "--json", stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE))
    lines: list[str] = []
    readers = [threading.Thread(target=lambda p=p: [lines.append(x.decode()) for x in p.stdout]) for p in syncs]
    for t in readers:
        t.start()

    restarts_while_writing = 0
    for _ in range(3):   # each restart once every sync loop has made about one more pass since the last
        seen = len(lines)
        deadline = time.monotonic() + 60
        while len(lines) < seen + len(syncs) and time.monotonic() < deadline:
            time.sleep(0.1)
        if any(w.poll() is None for w in writers):
            restarts_while_writing += 1
        restart_postgres()
    for w in writers:
        assert w.wait(timeout=600) == 0, w.stderr.read().decode()[-2000:]
    time.sleep(1.0)
    for p in syncs:
        assert p.poll() is None, f"a sync loop died: {p.stderr.read().decode()[-2000:]}"
        p.terminate()       # possibly mid-transaction: rolled back, the final pass redoes it
        p.wait(timeout=60)
    for t in readers:
        t.join()
    assert restarts_while_writing == 3, "the writers finished before the restarts: the run proves nothing"
    passes = [json.loads(x) for x in lines if x.startswith("{")]
    assert sum(p["retries"] for p in passes) > 0, "no sync ever met the restarts"
    assert sum(p["rows"] for p in passes) > 0

    for role in ROLES:     # catch up after the loops were cut off
        group = [c for c in caps if c["role"] == role]
        p = _capsule("fleet", "sync", "--dsn", pg_dsn, *[a for c in group for a in ("--state", str(c["state"]))],
                     "--role", role, "--account", group[0]["account"], "--json", stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()

    # every row once: the fleet holds exactly each capsule's local rows (all columns), no more
    with eng.connect() as conn:
        tags = {r.source: r for r in conn.execute(sa.select(schema.capsules))}
    assert len(tags) == CAPSULES
    counts = {s.name: 0 for s in schema.SYNCED}
    for c in caps:
        tag = tags[str(c["state"].resolve())]
        assert (tag.role, tag.account) == (c["role"], c["account"])
        for synced in schema.SYNCED:
            local = local_rows(c["state"], synced)
            remote = fleet_rows(eng, tag.capsule, synced)
            assert len(remote) == len(set(remote)) == len(local), (c["tag"], synced.name)
            assert set(remote) == local, (c["tag"], synced.name)
            counts[synced.name] += len(local)
    assert counts["emissions"] == CAPSULES * ITERATIONS
    assert counts["calls"] == CAPSULES * ITERATIONS * 5
    assert counts["route_events"] == CAPSULES * ITERATIONS * 2

    # totals: the fleet report is the sum of the capsules' own reports
    procs = []
    for c in caps:
        env = {"JACKIN_CTX_STATE_DIR": str(c["state"])}
        procs.append((c, _capsule("ctx", "report", "--json", "--claude-dir", str(c["claude"]), env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE),
                      _capsule("ctx", "gain", "--json", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    local = {}
    for c, rep, gain in procs:
        r_out, r_err = rep.communicate(timeout=300)
        g_out, _ = gain.communicate(timeout=300)
        assert rep.returncode == 0 and gain.returncode == 0, r_err.decode()[-2000:]
        local[str(c["state"].resolve())] = (json.loads(r_out), json.loads(g_out))
    p = _capsule("fleet", "report", "--json", "--dsn", pg_dsn, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()
    fleet = json.loads(out)
    assert len(fleet["capsules"]) == CAPSULES
    for cap in fleet["capsules"]:
        rep, gain = local[cap["source"]]
        assert cap["total"] == gain["total"]                       # the same object as `ctx gain --json`
        assert cap["usage"]["calls"] == rep["totals"]["calls"]
        assert cap["savings"]["net_tokens"] == rep["savings"]["totals"]["net_tokens"]
    sums = {k: sum(r["totals"][k] for r, _ in local.values())
            for k in ("calls", "input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h",
                      "output_tokens")}
    for k, v in sums.items():
        assert fleet["fleet"]["usage"][k] == v, k
    assert math.isclose(fleet["fleet"]["usage"]["cost_usd"], sum(r["totals"]["cost_usd"] for r, _ in local.values()),
                        abs_tol=1e-6)
    for k in ("removed_tokens", "added_tokens", "bounce_tokens", "net_tokens", "received_tokens"):
        assert fleet["fleet"]["savings"][k] == sum(r["savings"]["totals"][k] for r, _ in local.values()), k
    for k in ("emissions", "raw_tokens", "emitted_tokens", "saved_tokens", "would_save_tokens"):
        assert fleet["fleet"]["total"][k] == sum(g["total"][k] for _, g in local.values()), k
    assert fleet["fleet"]["total"]["emissions"] == sum(r["ledger"]["emissions"] for r, _ in local.values())
    by_role = {g["role"]: g for g in fleet["by_role"]}
    assert set(by_role) == set(ROLES) and all(g["capsules"] == CAPSULES // 4 for g in by_role.values())
    shares = {q["account"]: q for q in fleet["quota_share"]}
    assert set(shares) == {"acct-a", "acct-b"}
    assert math.isclose(sum(r["token_share"] for r in shares["acct-a"]["by_role"]), 1.0, abs_tol=1e-3)
    eng.dispose()
