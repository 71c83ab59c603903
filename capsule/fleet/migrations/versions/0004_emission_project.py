"""Emissions gain the project they ran in (the ledger's `project`, for `ctx gain --by project`).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("emissions") as batch:
        batch.add_column(sa.Column("project", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("emissions") as batch:
        batch.drop_column("project")
