"""The route layer's rows: route_events (ledger.db) and quota_samples (quota.db), as issue 18 keeps them.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _source():
    return sa.Column("capsule", sa.Text, sa.ForeignKey("capsules.capsule"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "route_events", _source(),
        sa.Column("id", sa.BigInteger, nullable=False),
        sa.Column("ts", sa.Double, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        *(sa.Column(c, sa.Text) for c in ("session", "conversation", "task_class", "source", "reason")),
        sa.Column("detail", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("capsule", "id"),
    )
    op.create_index("route_events_ts", "route_events", ["ts"])
    op.create_table(
        "quota_samples", _source(),
        sa.Column("id", sa.BigInteger, nullable=False),
        sa.Column("ts", sa.Double, nullable=False),
        *(sa.Column(c, sa.Text, nullable=False) for c in ("account", "regime", "api", "window")),
        sa.Column("utilization", sa.Double, nullable=False),
        sa.Column("status", sa.Text),
        sa.Column("resets_at", sa.Double),
        sa.Column("session", sa.Text),
        sa.Column("source", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("capsule", "id"),
    )
    op.create_index("quota_window", "quota_samples", ["account", "window", "ts"])


def downgrade() -> None:
    op.drop_table("quota_samples")
    op.drop_table("route_events")
