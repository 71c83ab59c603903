"""Alembic's environment for the fleet schema: runs on the connection capsule.fleet.migrate hands in.

Not responsible for choosing a database (the caller's engine) or for the schema (the versions).
Invariant: the same revisions run on SQLite and PostgreSQL; SQLite gets batch mode for ALTERs.
"""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
