"""Stores that only grew get a retention (issue 24): ledger.db and usage.db lose rows past their age
and, oldest first, past their size; proxy.db loses a conversation's rewrites only all together, once
the newest is past its age (a resumable conversation keeps every one); a store another process
holds locked is skipped at once, never waited on; doctor shows the limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import apsw

from capsule.measure.ledger import Ledger, Row
from capsule.measure.usage import Batch, Call, UsageStore
from capsule.store.conversation_memo import Memo
from capsule.store import retention

DAY = 86400.0


def _row(ts: float, i: int) -> Row:
    return Row(scope="s", command=f"cmd {i} " + "x" * 200, family="f", transform="t", stream="stdout", mode="standard",
               applied=True, raw_tokens=10, emitted_tokens=5, raw_bytes=100, emitted_bytes=50, exit_code=0,
               handle=None, duration_ms=1.0, token_label="", ts=ts)


def _count(path, table) -> int:
    con = apsw.Connection(str(path))
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    finally:
        con.close()


def test_ledger_and_usage_rows_past_their_age_go_recent_ones_stay(state_dir):
    now = time.time()
    ledger = Ledger(state_dir / "ledger.db")
    for i in range(30):
        ledger.record(_row(now - (200 if i < 20 else 1) * DAY, i))
    ledger.close()
    usage = UsageStore(state_dir / "usage.db")
    usage.write(Batch(calls=[Call("claude", f"msg_{i}", "s", "m", now - (500 if i < 5 else 1) * DAY) for i in range(8)]))
    usage.close()
    out = retention.prune_all(state_dir)
    assert out["ledger"]["deleted"] == 20 and out["usage"]["deleted"] == 5, out
    assert _count(state_dir / "ledger.db", "emissions") == 10 and _count(state_dir / "usage.db", "calls") == 3


def test_over_its_size_the_oldest_rows_go_a_batch_at_a_time(state_dir):
    now = time.time()
    ledger = Ledger(state_dir / "ledger.db")
    for i in range(3000):
        ledger.record(_row(now - i, i))
    ledger.close()
    conf = retention.settings()
    conf["stores"]["ledger"]["max_mb"] = 0.2
    conf["batch_rows"] = 500
    first = retention.prune(state_dir, "ledger", conf=conf)
    assert first["deleted"] == 500                      # incremental: one batch per pass
    for _ in range(20):
        if retention.prune(state_dir, "ledger", conf=conf)["used_mb"] <= 0.2:
            break
    con = apsw.Connection(str(state_dir / "ledger.db"))
    first_id, last_id = con.execute("SELECT min(id), max(id) FROM emissions").fetchall()[0]
    # row i was written at now - i: the oldest are the highest ids; they went, the newest stayed
    assert retention.used_mb(con) <= 0.2 and first_id == 1 and last_id <= 2500
    con.close()


def test_a_resumable_conversation_keeps_all_its_rewrites(state_dir):
    memo = Memo(state_dir / "proxy.db")
    for conv in ("old", "resumed"):
        for i in range(5):
            memo.put("anthropic", conv, f"t{i}", f"text {conv} {i}", f"short {i}")
    memo.close()
    con = apsw.Connection(str(state_dir / "proxy.db"))
    con.execute("UPDATE memo SET ts = ?", (time.time() - 60 * DAY,))
    con.execute("UPDATE memo SET ts = ? WHERE conversation = 'resumed' AND output = 'short 4'", (time.time(),))
    con.close()
    assert retention.prune_all(state_dir)["proxy"]["deleted"] == 5
    memo = Memo(state_dir / "proxy.db")
    try:
        assert all(memo.get("anthropic", "resumed", f"t{i}", f"text resumed {i}") == f"short {i}" for i in range(5))
        assert memo.get("anthropic", "old", "t0", "text old 0") is Memo.MISSING
    finally:
        memo.close()


def test_a_locked_store_is_skipped_never_waited_on(state_dir):
    ledger = Ledger(state_dir / "ledger.db")
    ledger.record(_row(time.time() - 400 * DAY, 1))
    ledger.close()
    holder = apsw.Connection(str(state_dir / "ledger.db"))
    holder.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        out = retention.prune(state_dir, "ledger")
        assert time.monotonic() - t0 < 2 and "skipped" in out, out
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_doctor_shows_each_stores_retention(state_dir):
    Ledger(state_dir / "ledger.db").close()
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    report = json.loads(subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor", "--json"], env=env,
                                       capture_output=True, timeout=120).stdout)
    assert set(report["state"]["retention"]) == {"ledger", "usage", "quota", "proxy"}
    text = subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor"], env=env, capture_output=True,
                          timeout=120).stdout.decode()
    (ledger,) = [ln for ln in text.splitlines() if ln.startswith("ledger ")]
    assert "keep 90d/512MB" in ledger, text
