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


def url(dsn: str) -> str:
    """postgresql://… runs on psycopg 3; sqlite:///path stays SQLite."""
    for prefix in ("postgresql+psycopg://", "sqlite:///"):
        if dsn.startswith(prefix):
            return dsn
    for prefix in ("postgresql://", "postgres://"):
        if dsn.startswith(prefix):
            return "postgresql+psycopg://" + dsn[len(prefix):]
    raise DsnError(f"--dsn {redact(dsn)!r}: expected postgresql://USER@HOST:PORT/DB or sqlite:///PATH")


def redact(dsn: str) -> str:
    """The DSN without its password, for messages and logs."""
    try:
        return sa.engine.make_url(dsn).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a DSN too broken to parse has no password we can find
        return dsn.split("@")[-1]


def engine(dsn: str, **kw) -> sa.Engine:
    kw.setdefault("pool_pre_ping", True)
    return sa.create_engine(url(dsn), **kw)


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
