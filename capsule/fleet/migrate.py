"""Open a fleet database (PostgreSQL, or SQLite for a single host) and bring it to the schema's head.

Not responsible for the schema itself (capsule.fleet.schema, and migrations/versions as its history).
Invariant: every database is migrated by the same Alembic revisions, whatever its engine; a DSN
that is not PostgreSQL or SQLite is refused with a message naming it.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).with_name("migrations")


class DsnError(ValueError):
    """A DSN capsule cannot use; the message names it and the forms it takes."""


CONNECT_TIMEOUT_S = 5      # libpq waits forever for a host that does not answer; a DSN may say otherwise
INT_PARTS = ("port", "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count")


def url(dsn: str) -> str:
    """postgresql://… runs on psycopg 3; sqlite:///path stays SQLite. The one place a DSN is parsed:
    every part capsule or libpq reads as a number is checked here, so a malformed DSN (port=abc,
    `[::1`, connect_timeout=abc) is a DsnError naming the part, never a traceback at connect time."""
    for prefix in ("postgresql+psycopg://", "sqlite:///"):
        if dsn.startswith(prefix):
            out = dsn
            break
    else:
        for prefix in ("postgresql://", "postgres://"):
            if dsn.startswith(prefix):
                out = "postgresql+psycopg://" + dsn[len(prefix):]
                break
        else:
            raise DsnError(f"--dsn {redact(dsn)!r}: expected postgresql://USER@HOST:PORT/DB or sqlite:///PATH")
    if out.startswith("sqlite:"):
        return out
    try:
        parsed = sa.engine.make_url(out)
    except (ValueError, sa.exc.ArgumentError) as exc:
        raise DsnError(f"--dsn {redact(dsn)!r}: cannot be parsed ({exc}); expected "
                       "postgresql://USER@HOST:PORT/DB (an IPv6 host in brackets: [::1])") from None
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise DsnError(f"--dsn {redact(dsn)!r}: port {parsed.port} is not 1-65535")
    for key in INT_PARTS:
        values = parsed.query.get(key)
        for v in ([values] if isinstance(values, str) else list(values or ())):
            if not all(p.strip().isdigit() for p in v.split(",")):   # libpq: a list for several hosts
                raise DsnError(f"--dsn {redact(dsn)!r}: {key}={v!r} is not a whole number")
    return out


def connect_timeout(dsn: str) -> dict:
    """connect_args giving a PostgreSQL DSN without its own connect_timeout capsule's default."""
    if dsn.startswith("sqlite:") or "connect_timeout" in sa.engine.make_url(url(dsn)).query:
        return {}
    return {"connect_timeout": CONNECT_TIMEOUT_S}


def redact(dsn: str) -> str:
    """The DSN without its password, for messages and logs."""
    try:
        return sa.engine.make_url(dsn).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a DSN too broken to parse has no password we can find
        return dsn.split("@")[-1]


def engine(dsn: str, timeout_s: float | None = None, **kw) -> sa.Engine:
    """`timeout_s`: the longest one connection attempt may take (a DSN's connect_timeout wins)."""
    kw.setdefault("pool_pre_ping", True)
    target = url(dsn)
    args = connect_timeout(dsn)
    if args and timeout_s is not None:
        args["connect_timeout"] = max(1, min(int(timeout_s), CONNECT_TIMEOUT_S))
    if args:
        kw["connect_args"] = {**args, **kw.get("connect_args", {})}
    return sa.create_engine(target, **kw)


def _config(connection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def revisions() -> list[str]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(_config(None))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def head() -> str:
    return ScriptDirectory.from_config(_config(None)).get_current_head()


def current(eng: sa.Engine) -> str | None:
    with eng.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(eng: sa.Engine, revision: str = "head") -> None:
    """Bring the database to `revision`. Several syncs starting at once on PostgreSQL: an advisory
    lock lets one migrate while the others wait, then find nothing to do."""
    with eng.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(2126010101)"))
        command.upgrade(_config(conn), revision)
