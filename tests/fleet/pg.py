"""The fleet tests' PostgreSQL server: its DSN and a real restart (scripts/setup-postgres.sh exports both).

Nothing here skips: a missing variable fails the test with the command that provides it.
"""

from __future__ import annotations

import os
import subprocess

import pytest

SETUP = "eval \"$(scripts/setup-postgres.sh start)\""


def server_dsn() -> str:
    dsn = os.environ.get("CAPSULE_TEST_PG_DSN")
    if not dsn:
        pytest.fail(f"CAPSULE_TEST_PG_DSN is not set: run the tests through scripts/test-all, or first {SETUP}",
                    pytrace=False)
    return dsn


def restart_postgres() -> None:
    """A real restart of the test server (fast shutdown: open connections are cut)."""
    data, bin_dir = os.environ.get("CAPSULE_TEST_PG_DATA"), os.environ.get("CAPSULE_TEST_PG_BIN")
    if not data or not bin_dir:
        pytest.fail(f"CAPSULE_TEST_PG_DATA / CAPSULE_TEST_PG_BIN are not set: {SETUP}", pytrace=False)
    subprocess.run(["runuser", "-u", "postgres", "--", f"{bin_dir}/pg_ctl", "-D", data, "-l", os.path.join(os.path.dirname(data), "server.log"),
                    "-m", "fast", "-w",
                    "-t", "60", "restart"], check=True, capture_output=True)
