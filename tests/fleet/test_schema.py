"""One schema, two engines: every migration head is the same on SQLite and PostgreSQL (tables,
columns, types, nullability, defaults, keys, indexes); the head is capsule.fleet.schema; and the
local stores' own apsw DDL (ledger.db, usage.db) is that schema without the `capsule` tag."""

from __future__ import annotations

import re

import apsw
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from capsule.fleet import migrate, schema
from capsule.measure.ledger import Ledger
from capsule.route.quota import QuotaStore
from capsule.store.route_rows import RouteLog
from capsule.measure.usage import UsageStore


def _default(value) -> str | None:
    """'1', 1 and '1'::integer are the same default on the two engines."""
    if value is None:
        return None
    return re.sub(r"::\w+( \w+)?$", "", str(value)).strip("'")


def shape(eng: sa.Engine) -> dict:
    """Everything a schema promises, read back from the database itself."""
    insp = sa.inspect(eng)
    out = {}
    for table in sorted(t for t in insp.get_table_names() if t != "alembic_version"):
        out[table] = {
            "columns": {c["name"]: (type(c["type"].as_generic()).__name__, c["nullable"], _default(c.get("default")))
                        for c in insp.get_columns(table)},
            "primary_key": insp.get_pk_constraint(table)["constrained_columns"],
            "foreign_keys": sorted((tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]))
                                   for f in insp.get_foreign_keys(table)),
            "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in insp.get_indexes(table)),
            "unique": sorted(tuple(u["column_names"]) for u in insp.get_unique_constraints(table)),
        }
    return out


@pytest.fixture
def engines(pg_dsn, tmp_path):
    lite = migrate.engine(f"sqlite:///{tmp_path / 'fleet.db'}")
    pg = migrate.engine(pg_dsn)
    yield lite, pg
    lite.dispose()
    pg.dispose()


def test_every_migration_head_is_the_same_on_sqlite_and_postgres(engines):
    lite, pg = engines
    revisions = migrate.revisions()
    assert len(revisions) >= 2 and revisions[-1] == migrate.head()
    seen = []
    for rev in revisions:
        migrate.upgrade(lite, rev)
        migrate.upgrade(pg, rev)
        assert migrate.current(lite) == migrate.current(pg) == rev
        a, b = shape(lite), shape(pg)
        assert a == b, f"revision {rev}: SQLite and PostgreSQL differ"
        assert a and all(t["columns"] and t["primary_key"] for t in a.values())
        seen.append(a)
    assert seen[0] != seen[-1]     # the history really moves: each head is checked, not one schema twice


def test_the_head_is_the_schema_definition_on_both_engines(engines):
    for eng in engines:
        migrate.upgrade(eng)
        with eng.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), schema.metadata)
        assert diff == [], f"{eng.dialect.name}: migrations head != capsule.fleet.schema: {diff}"
        assert set(shape(eng)) == set(schema.metadata.tables)


def test_migrating_twice_changes_nothing(engines):
    for eng in engines:
        migrate.upgrade(eng)
        before = shape(eng)
        migrate.upgrade(eng)
        assert shape(eng) == before


AFFINITY = {"BigInteger": "INTEGER", "Integer": "INTEGER", "Double": "REAL", "Text": "TEXT"}


def _local_shape(db: str, table: str) -> dict:
    conn = apsw.Connection(db)
    cols = {r[1]: (r[2].upper(), bool(r[3]), r[5]) for r in conn.execute(f"PRAGMA table_info({table})")}
    indexes = {}
    for _, name, unique, origin, _ in conn.execute(f"PRAGMA index_list({table})"):
        if origin == "c":
            indexes[name] = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({name})"))
    conn.close()
    return {"columns": {n: t for n, (t, _, _) in cols.items()},
            "not_null": {n for n, (_, nn, pk) in cols.items() if nn or (pk and t_is_rowid(cols, n))},
            "primary_key": tuple(n for n, _ in sorted(((n, pk) for n, (_, _, pk) in cols.items() if pk),
                                                      key=lambda x: x[1])),
            "indexes": indexes}


def t_is_rowid(cols: dict, name: str) -> bool:
    """`id INTEGER PRIMARY KEY` is the rowid: never NULL, though PRAGMA says notnull=0."""
    pks = [n for n, (_, _, pk) in cols.items() if pk]
    return pks == [name] and cols[name][0] == "INTEGER"


def test_local_stores_are_the_schema_without_the_capsule_tag(state_dir):
    Ledger().close()
    UsageStore().close()
    RouteLog().close()
    QuotaStore().close()
    assert {s.name for s in schema.SYNCED} >= {"emissions", "calls", "tools", "sessions", "route_events",
                                                 "quota_samples"}
    for synced in schema.SYNCED:
        local = _local_shape(str(state_dir / synced.db), synced.name)
        table = synced.table
        want_cols = {c.name: AFFINITY[type(c.type).__name__] for c in table.columns if c.name != schema.SOURCE}
        assert local["columns"] == want_cols, synced.name
        want_nn = {c.name for c in table.columns if not c.nullable and c.name != schema.SOURCE}
        assert local["not_null"] == want_nn, synced.name
        assert local["primary_key"] == synced.local_key, synced.name
        want_idx = {i.name: tuple(c.name for c in i.columns) for i in table.indexes}
        assert local["indexes"] == want_idx, synced.name
        assert schema.SOURCE == table.c[schema.SOURCE].name and list(table.primary_key.columns)[0].name == schema.SOURCE
