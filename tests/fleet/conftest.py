"""The fleet tests' PostgreSQL: the real server scripts/setup-postgres.sh started for this run.

Nothing here skips: without CAPSULE_TEST_PG_DSN (scripts/test-all exports it) every fleet test
fails with the command that provides it. Each test gets a database of its own, dropped after.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.fleet.pg import server_dsn


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

