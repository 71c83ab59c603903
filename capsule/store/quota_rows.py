"""QUOTA ROWS: quota.db's `quota_samples`, the one API rate-limit samples are written and read through.

One row per window a response's headers (or a Codex rollout event) described: the schema, the typed
sample and the bounds a stored number must meet. Not responsible for reading headers or for the
quota model (route/quota.py), nor for acting on it (route/governor.py).
Invariant: text from outside is redacted and numbers are finite and in range before a row is
written; a read is bounded (the newest READ_ROWS at most) and skips rows stored before the bounds
were checked; the SQL for this table lives here only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from capsule.ground import paths
from capsule.ground.numbers import bounded
from capsule.store import redact, sqlite
from capsule.store.sqlite import connect

SCHEMA = """
CREATE TABLE IF NOT EXISTS quota_samples(
  id INTEGER PRIMARY KEY,
  ts REAL NOT NULL,
  account TEXT NOT NULL,
  regime TEXT NOT NULL,
  api TEXT NOT NULL,
  window TEXT NOT NULL,
  utilization REAL NOT NULL,
  status TEXT,
  resets_at REAL,
  session TEXT,
  source TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS quota_window ON quota_samples(account, window, ts);
"""
QUOTA_DB = "quota.db"
MAX_UTILIZATION = 2.0      # a window's use past its limit (overage) is still a utilization; more is not
TIME_MAX = 4_102_444_800.0  # 2100-01-01 UTC: a reset later than that is not a reset
READ_ROWS = 20_000         # at most this many (the newest) per read, however many the store holds


@dataclass(frozen=True)
class Sample:
    ts: float
    account: str
    regime: str            # subscription | api_key | unknown
    api: str
    window: str            # 5h, 7d, requests, tokens, ...
    utilization: float
    status: str | None = None
    resets_at: float | None = None
    session: str | None = None
    source: str = "proxy"


class QuotaStore:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else paths.state_dir() / QUOTA_DB
        self.conn = connect(self.path)
        with sqlite.write(self.conn):
            self.conn.execute(SCHEMA)

    def add(self, samples: list[Sample]) -> None:
        if not samples:
            return
        with sqlite.write(self.conn):
            for s in samples:
                d = redact.redacted_value(asdict(s))      # header and account text from outside (issue 31)
                self.conn.execute("INSERT INTO quota_samples(ts, account, regime, api, window, utilization, status, "
                                  "resets_at, session, source) VALUES(:ts, :account, :regime, :api, :window, "
                                  ":utilization, :status, :resets_at, :session, :source)", d)

    def samples(self, since: float | None = None, limit: int = READ_ROWS) -> list[Sample]:
        """The newest `limit` samples since `since`, oldest first; a row whose numbers are not finite
        and in range (stored before they were checked) is skipped."""
        cols = "ts, account, regime, api, window, utilization, status, resets_at, session, source"
        # Newest by rowid (insertion order): a backward walk that stops at `limit`, no index on ts needed
        rows = self.conn.execute(f"SELECT {cols}, id FROM quota_samples WHERE ts >= ? ORDER BY id DESC LIMIT ?",
                                 (since or 0.0, limit)).fetchall()
        out = []
        for r in sorted(rows, key=lambda r: (r[0], r[-1])):
            r = r[:-1]
            s = Sample(*r)
            if (bounded(s.ts, 0.0, TIME_MAX) is None or bounded(s.utilization, 0.0, MAX_UTILIZATION) is None
                    or (s.resets_at is not None and bounded(s.resets_at, 0.0, TIME_MAX) is None)):
                continue
            out.append(s)
        return out

    def close(self) -> None:
        self.conn.close()
