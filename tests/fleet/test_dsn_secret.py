"""Issue 31: the fleet DSN's password never sits in argv (/proc/PID/cmdline is readable by every
local user). --dsn with a password is refused (exit 2, the fix named); --dsn-file and
$CAPSULE_FLEET_DSN carry it, against the real PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from capsule.measure.ledger import Ledger
from tests.fleet.test_sync import _row

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-Fleet-Pw"


def _capsule(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "capsule", *args], capture_output=True, text=True, cwd=REPO,
                          env={**{k: v for k, v in os.environ.items() if k != "CAPSULE_FLEET_DSN"}, **(env or {})},
                          timeout=120, **kw)


def _with_password(dsn: str) -> str:
    """The test server trusts local connections, so a password in the DSN is carried and ignored."""
    return dsn.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@", 1)


def test_a_password_on_the_command_line_is_refused_naming_the_fix(tmp_path):
    for args in (["fleet", "sync", "--dsn", f"postgresql://u:{PASSWORD}@127.0.0.1:1/x", "--state", str(tmp_path)],
                 ["fleet", "sync", "--dsn", f"postgresql://u@127.0.0.1:1/x?password={PASSWORD}", "--state",
                  str(tmp_path)],
                 ["fleet", "report", "--dsn", f"postgresql://u:{PASSWORD}@127.0.0.1:1/x"],
                 ["ctx", "report", "--dsn", f"postgres://u:{PASSWORD}@db/x"]):
        r = _capsule(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert "--dsn-file" in r.stderr and "CAPSULE_FLEET_DSN" in r.stderr and "Traceback" not in r.stderr
        assert PASSWORD not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    none = _capsule("fleet", "sync", "--state", str(tmp_path))
    assert none.returncode == 2 and "--dsn-file" in none.stderr


def test_the_dsn_from_a_file_or_the_environment_syncs_and_argv_holds_no_password(pg_dsn, tmp_path):
    state = tmp_path / "c"
    state.mkdir()
    led = Ledger(state / "ledger.db")
    for i in range(3):
        led.record(_row(i))
    led.close()
    dsn = _with_password(pg_dsn)
    assert PASSWORD in dsn
    secret = tmp_path / "dsn"
    secret.write_text(dsn + "\n")
    secret.chmod(0o600)
    r = _capsule("fleet", "sync", "--dsn-file", str(secret), "--state", str(state), "--json")
    assert r.returncode == 0 and '"emissions": 3' in r.stdout, r.stderr
    r = _capsule("fleet", "report", "--json", env={"CAPSULE_FLEET_DSN": dsn})
    assert r.returncode == 0 and PASSWORD not in r.stdout + r.stderr, r.stderr
    # a long-running sync (the sidecar's --every loop): what every local user can read of it
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "fleet", "sync", "--state", str(state), "--every", "0.2"],
                            cwd=REPO, env={**os.environ, "CAPSULE_FLEET_DSN": dsn}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline()           # the first pass has run
        assert b"fleet sync" in line, line
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert PASSWORD.encode() not in cmdline and b"fleet" in cmdline
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    missing = _capsule("fleet", "sync", "--dsn-file", str(tmp_path / "nope"), "--state", str(state))
    assert missing.returncode == 2 and "nope" in missing.stderr
    (tmp_path / "empty").write_text("\n")
    empty = _capsule("fleet", "sync", "--dsn-file", str(tmp_path / "empty"), "--state", str(state))
    assert empty.returncode == 2 and "empty" in empty.stderr
