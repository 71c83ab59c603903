"""Emissions gain what the ledger added later: would_emit_tokens (measure-only rows) and intent.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("emissions") as batch:
        batch.add_column(sa.Column("would_emit_tokens", sa.BigInteger))
        batch.add_column(sa.Column("intent", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("emissions") as batch:
        batch.drop_column("intent")
        batch.drop_column("would_emit_tokens")
