"""The order the control socket relies on (docs/shell-protocol.md): the reply is written as soon as the
emission exists, with its original already archived (the footer's handle expands byte-exact); the
ledger row comes after it, off the shim's path, and is still always written: a busy ledger delays it
(retried without waiting for another request), SIGTERM writes it before exit, and a supervisor killed
outright loses only the row, never the original, and leaves no reader waiting on it.

The ledger is held busy by a real second writer (SQLite BEGIN IMMEDIATE), as another capsule
process would."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import time

from capsule.measure.ledger import Ledger
from capsule.store.archive import Archive
from capsule.supervisor import control_server

RAW = b"".join(b"step %d: processed shard-%d of the nightly batch\n" % (i, i * 7) for i in range(3000))
CMD = b"sh nightly.sh"


def _obs(raw: bytes = RAW, cmd: bytes = CMD) -> bytes:
    return b"OBS1 0 1000 %d %d 0 0\n" % (len(cmd), len(raw)) + cmd + raw


def _started(supervise):
    run = supervise("sleep", "120")
    run.wait_for(run.socket)
    control_server.wait_ready(run.socket, 60)       # warm: STATUS answered, the ledger exists
    return run


def _hold_ledger(run) -> sqlite3.Connection:
    busy = sqlite3.connect(run.state / "ledger.db", isolation_level=None, timeout=30)
    busy.execute("BEGIN IMMEDIATE")                 # the write lock: no row can be written now
    return busy


def _rows_for(busy: sqlite3.Connection) -> int:
    return busy.execute("SELECT count(*) FROM emissions WHERE command = ?", (CMD.decode(),)).fetchone()[0]


def _served(reply: bytes) -> tuple[bytes, str]:
    head, _, body = reply.partition(b"\n")
    assert head.startswith(b"OK "), reply[:80]
    handle = re.search(rb"<<ccr:([0-9a-f]{24})>>", body)
    assert handle and len(body) < len(RAW), body[-300:]
    return body, handle.group(1).decode()


def _stop_agent(run) -> None:
    pid = control_server.status(run.socket, 30)["agent_pid"]
    os.kill(pid, signal.SIGKILL)


def test_the_reply_comes_before_its_row_and_a_busy_ledger_only_delays_the_row(supervise):
    run = _started(supervise)
    busy = _hold_ledger(run)
    try:
        _, handle = _served(control_server.request(run.socket, _obs(), 30))
        assert _rows_for(busy) == 0                 # answered while its row could not be written
        assert Archive(run.state / "archive.db", readonly=True).get(handle) == RAW   # the footer's promise holds now
        assert list((run.state / "pending").iterdir())  # rows owed: ledger readers wait for them
        time.sleep(2.5)                             # past the drain's wait for the lock: the row went back
    finally:
        busy.execute("ROLLBACK")
        busy.close()
    # No other request comes; the row is written all the same, and a reader right now waits for it
    # (store/finisher.py) instead of reading a ledger without it.
    start = time.monotonic()
    rows = [r for r in Ledger(run.state / "ledger.db").rows() if r["command"] == CMD.decode()]
    assert len(rows) == 1 and rows[0]["handle"] == handle
    assert time.monotonic() - start < 20            # not the reader's 60 s give-up (finisher.WAIT_S)


def test_sigterm_with_a_row_owed_writes_it_before_the_supervisor_exits(supervise):
    run = _started(supervise)
    busy = _hold_ledger(run)
    try:
        _, handle = _served(control_server.request(run.socket, _obs(), 30))
        assert _rows_for(busy) == 0
        run.proc.send_signal(signal.SIGTERM)        # forwarded to the agent; the supervisor closes its engine
        time.sleep(1.0)
    finally:
        busy.execute("ROLLBACK")
        busy.close()
    run.finish(60)
    rows = [r for r in Ledger(run.state / "ledger.db").rows() if r["command"] == CMD.decode()]
    assert len(rows) == 1 and rows[0]["handle"] == handle


def test_a_supervisor_killed_between_reply_and_row_keeps_the_original_and_frees_readers(supervise):
    run = _started(supervise)
    busy = _hold_ledger(run)
    try:
        _, handle = _served(control_server.request(run.socket, _obs(), 30))
        _stop_agent(run)
        run.proc.kill()                              # SIGKILL: no drain, no cleanup
        run.finish(30)
    finally:
        busy.execute("ROLLBACK")
        busy.close()
    # What the reply promised is there: its original, byte-exact, under the footer's handle.
    assert Archive(run.state / "archive.db", readonly=True).get(handle) == RAW
    # The owed row died with the process, and so did its pending lock: a reader does not wait for it.
    start = time.monotonic()
    Ledger(run.state / "ledger.db").rows()
    assert time.monotonic() - start < 5
    assert not list((run.state / "pending").iterdir())   # the dead holder's file cleared by the reader
