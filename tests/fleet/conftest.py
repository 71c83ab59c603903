"""The fleet tests' PostgreSQL: the real server scripts/setup-postgres.sh started for this run.

Nothing here skips: without CAPSULE_TEST_PG_DSN (scripts/test-all exports it) every fleet test
fails with the command that provides it. Each test gets a database of its own, dropped after.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import psycopg
import pytest

SETUP = "eval \"$(scripts/setup-postgres.sh start)\""


def server_dsn() -> str:
    dsn = os.environ.get("CAPSULE_TEST_PG_DSN")
    if not dsn:
        pytest.fail(f"CAPSULE_TEST_PG_DSN is not set: run the tests through scripts/test-all, or first {SETUP}",
                    pytrace=False)
    return dsn


def _with_db(dsn: str, name: str) -> str:
    base, _, _ = dsn.rpartition("/")
    return f"{base}/{name}"


@pytest.fixture
def pg_dsn() -> str:
    """postgresql://… of a fresh, empty database on the test server."""
    dsn = server_dsn()
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield _with_db(dsn, name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def restart_postgres() -> None:
    """A real restart of the test server (fast shutdown: open connections are cut)."""
    data, bin_dir = os.environ.get("CAPSULE_TEST_PG_DATA"), os.environ.get("CAPSULE_TEST_PG_BIN")
    if not data or not bin_dir:
        pytest.fail(f"CAPSULE_TEST_PG_DATA / CAPSULE_TEST_PG_BIN are not set: {SETUP}", pytrace=False)
    subprocess.run(["runuser", "-u", "postgres", "--", f"{bin_dir}/pg_ctl", "-D", data, "-l", os.path.join(os.path.dirname(data), "server.log"),
                    "-m", "fast", "-w",
                    "-t", "60", "restart"], check=True, capture_output=True)
