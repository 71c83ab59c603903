"""Hostile fleet inputs (issue 31): state dirs the agent wrote, and what it wrote into the fleet rows.
One hostile state dir (a ledger.db symlinked to /etc/shadow, a file of another owner, emissions.id
as TEXT, emissions as a view over an endless recursive CTE) is reported and skipped within its time
budget while the good capsules' rows are copied; `fleet report` shows control characters as escapes
and prints strict JSON; malformed DSN parts are one line, exit 2; a down database is said in seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest
import sqlalchemy as sa

from tests.fleet.conftest import pg_dsn  # noqa: F401 - the fleet tests' real PostgreSQL database
from tests.fleet.test_sync import _fill

from capsule.fleet import migrate, schema, sources, sync

REPO = Path(__file__).resolve().parents[2]
BUDGET_S = 1.0
COLUMNS = schema.LOCAL["emissions"].columns


def _capsule(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "capsule", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout)


# ---- the generator: hostile state dirs -----------------------------------------------------------
def _symlink_to_shadow(d: Path) -> None:
    (d / "ledger.db").symlink_to("/etc/shadow")


def _stranger_owns_it(d: Path) -> None:
    _fill(d, 2, 0.1)
    os.chown(d / "ledger.db", 54321, 54321)        # the tests run as root: any uid but the dir's


def _text_ids(d: Path) -> None:
    con = apsw.Connection(str(d / "ledger.db"))
    con.execute(f"CREATE TABLE emissions({', '.join(c + ' TEXT' for c in COLUMNS)})")
    con.execute(f"INSERT INTO emissions VALUES({', '.join('?' for _ in COLUMNS)})", ["x" * 8] * len(COLUMNS))
    con.close()


def _endless_view(d: Path) -> None:
    con = apsw.Connection(str(d / "ledger.db"))
    cols = ", ".join(("n" if c == "id" else "'x'") + f" AS {c}" for c in COLUMNS)
    con.execute(f"CREATE VIEW emissions AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                f"SELECT {cols} FROM r")
    con.close()


HOSTILE = {"symlink": _symlink_to_shadow, "stranger": _stranger_owns_it, "text-id": _text_ids,
           "endless-view": _endless_view}


def _dirs(tmp_path: Path) -> tuple[list[Path], list[Path]]:
    good = []
    for name in ("good-a", "good-b"):
        d = tmp_path / name
        d.mkdir()
        _fill(d, 3, 0.1)
        good.append(d)
    bad = []
    for name, make in HOSTILE.items():
        d = tmp_path / name
        d.mkdir()
        make(d)
        bad.append(d)
    return good, bad


def test_each_hostile_source_is_reported_and_skipped_the_good_ones_are_copied(pg_dsn, tmp_path):  # noqa: F811
    good, bad = _dirs(tmp_path)
    eng = migrate.engine(pg_dsn)
    migrate.upgrade(eng)
    order = [bad[0], good[0], bad[1], bad[2], bad[3], good[1]]     # good ones after bad ones, too
    t0 = time.monotonic()
    rep = sync.sync(eng, sources.from_dirs([str(d) for d in order]), source_budget_s=BUDGET_S)
    took = time.monotonic() - t0
    with eng.connect() as c:
        rows = c.execute(sa.select(sa.func.count()).select_from(schema.emissions)).scalar()
    eng.dispose()
    assert rows == 6 and rep.copied["emissions"] == 6, rep.as_dict()
    failed = {Path(f["source"]).name: f["error"] for f in rep.failed if f["table"] == "emissions"}
    assert set(failed) == set(HOSTILE), rep.failed
    assert "symlink" in failed["symlink"] and "uid 54321" in failed["stranger"]
    assert "str" in failed["text-id"] and "budget" in failed["endless-view"], failed
    assert took < 20, f"a pass with one endless source took {took:.1f} s"


def test_the_cli_reports_a_bad_source_in_one_line_and_copies_the_rest(pg_dsn, tmp_path):  # noqa: F811
    good, bad = _dirs(tmp_path)
    view = bad[3]
    r = _capsule("fleet", "sync", "--dsn", pg_dsn, "--state", str(good[0]), "--state", str(view),
                 "--state", str(bad[0]), "--source-budget", str(BUDGET_S), "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-1500:]
    out = json.loads(r.stdout)
    assert out["copied"]["emissions"] == 3 and len(out["failed"]) >= 2
    skipped = [ln for ln in r.stderr.splitlines() if "skipped" in ln]
    assert any(str(view) in ln and "budget" in ln for ln in skipped), r.stderr


def _seed_hostile_rows(dsn: str) -> None:
    eng = migrate.engine(dsn)
    migrate.upgrade(eng)
    esc = "\x1b]0;owned\x07\x1b[2J\x1b[8m\u202e"
    with eng.begin() as c:
        c.execute(schema.capsules.insert().values(capsule="c1", container=f"box{esc}", role=f"coder{esc}",
                                                  host=f"h{esc}", account=f"acct{esc}", source="/s",
                                                  first_sync=1.0, last_sync=2.0))
        c.execute(schema.quota_samples.insert().values(capsule="c1", id=1, ts=10.0, account=f"acct{esc}",
                                                       regime="subscription", api="anthropic", window=f"5h{esc}",
                                                       utilization=float("inf"), status="allowed",
                                                       resets_at=float("nan"), session="s", source="proxy"))
    eng.dispose()


def test_fleet_report_shows_control_characters_and_prints_strict_json(pg_dsn):  # noqa: F811
    _seed_hostile_rows(pg_dsn)
    text = _capsule("fleet", "report", "--dsn", pg_dsn)
    assert text.returncode == 0, text.stderr[-1500:]
    assert not any(ch in text.stdout for ch in "\x1b\x07\u202e") and "\\e]0;owned" in text.stdout
    js = _capsule("fleet", "report", "--dsn", pg_dsn, "--json")
    assert js.returncode == 0, js.stderr[-1500:]

    def refuse(name):
        raise AssertionError(f"{name} in fleet report --json")

    data = json.loads(js.stdout, parse_constant=refuse)
    assert data["quota_windows"][0]["utilization"] is None


MALFORMED = ["postgresql://u@127.0.0.1:abc/db", "postgresql://u@[::1/db", "postgresql://u@[::1:5432/db",
             "postgresql://u@127.0.0.1:1/db?connect_timeout=abc", "postgresql://u@127.0.0.1/db?port=abc",
             "postgresql://u@127.0.0.1:99999/db", "postgresql://u@h/db?host=a,b&port=1,x"]


def test_a_malformed_dsn_is_refused_where_it_is_parsed():
    for dsn in MALFORMED:
        with pytest.raises(migrate.DsnError) as err:
            migrate.url(dsn)
        assert "--dsn" in str(err.value) and "\n" not in str(err.value), dsn
    assert migrate.url("postgresql://u@h:5432/db?connect_timeout=3&port=5432") .startswith("postgresql+psycopg://")


@pytest.mark.parametrize("dsn", [MALFORMED[1], MALFORMED[4]])
def test_a_malformed_dsn_is_one_line_exit_2(dsn, tmp_path):
    for args in (["fleet", "report", "--dsn", dsn], ["fleet", "sync", "--dsn", dsn, "--state", str(tmp_path)]):
        r = _capsule(*args)
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, (
            args, r.stderr[-1500:])


def test_fleet_report_on_a_down_database_answers_in_seconds():
    from capsule.cli.fleet import REPORT_TIMEOUT_S

    assert REPORT_TIMEOUT_S <= 10
    t0 = time.monotonic()
    r = _capsule("fleet", "report", "--dsn", "postgresql://postgres@127.0.0.1:1/nowhere", "--timeout", "0.5")
    assert r.returncode == 1 and "unreachable" in r.stderr and time.monotonic() - t0 < 15, r.stderr
    assert migrate.connect_timeout("postgresql://u@h/db") == {"connect_timeout": migrate.CONNECT_TIMEOUT_S}
