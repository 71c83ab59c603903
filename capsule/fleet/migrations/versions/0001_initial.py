"""The first fleet schema: the tags, the cursors, and the rows as the local stores first kept them.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _source():
    return sa.Column("capsule", sa.Text, sa.ForeignKey("capsules.capsule"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "capsules",
        sa.Column("capsule", sa.Text, primary_key=True),
        sa.Column("container", sa.Text, nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("account", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("first_sync", sa.Double, nullable=False),
        sa.Column("last_sync", sa.Double, nullable=False),
    )
    op.create_table(
        "sync_cursors", _source(),
        sa.Column("tbl", sa.Text, nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("capsule", "tbl"),
    )
    op.create_table(
        "emissions", _source(),
        sa.Column("id", sa.BigInteger, nullable=False),
        sa.Column("ts", sa.Double, nullable=False),
        *(sa.Column(c, sa.Text) for c in ("scope", "command", "family", "transform", "stream", "mode")),
        sa.Column("applied", sa.Integer, nullable=False),
        sa.Column("raw_tokens", sa.BigInteger, nullable=False),
        sa.Column("emitted_tokens", sa.BigInteger, nullable=False),
        sa.Column("raw_bytes", sa.BigInteger, nullable=False),
        sa.Column("emitted_bytes", sa.BigInteger, nullable=False),
        sa.Column("exit_code", sa.Integer),
        sa.Column("handle", sa.Text),
        sa.Column("duration_ms", sa.Double),
        sa.Column("token_label", sa.Text, nullable=False),
        sa.Column("manifest", sa.Text, nullable=False),
        sa.Column("reports", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("capsule", "id"),
    )
    op.create_index("emissions_ts", "emissions", ["ts"])
    op.create_table(
        "calls", _source(),
        sa.Column("agent", sa.Text, nullable=False),
        sa.Column("call_id", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("thread_id", sa.Text),
        sa.Column("model", sa.Text),
        sa.Column("ts", sa.Double),
        *(sa.Column(c, sa.BigInteger, nullable=False) for c in (
            "input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h", "output_tokens")),
        sa.Column("cost_usd", sa.Double),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("origin", sa.Text),
        sa.Column("complete", sa.Integer, nullable=False, server_default="1"),
        sa.Column("seq", sa.BigInteger),
        sa.PrimaryKeyConstraint("capsule", "agent", "call_id"),
    )
    op.create_index("calls_session", "calls", ["agent", "session_id", "ts"])
    op.create_index("calls_seq", "calls", ["seq"])
    op.create_table(
        "tools", _source(),
        sa.Column("agent", sa.Text, nullable=False),
        sa.Column("tool_id", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("thread_id", sa.Text),
        sa.Column("ts", sa.Double),
        *(sa.Column(c, sa.Text) for c in ("name", "kind", "target")),
        sa.Column("result_tokens", sa.BigInteger),
        sa.Column("result_bytes", sa.BigInteger),
        sa.Column("result_hash", sa.Text),
        sa.Column("is_error", sa.Integer),
        sa.Column("handle", sa.Text),
        sa.Column("seq", sa.BigInteger),
        sa.PrimaryKeyConstraint("capsule", "agent", "tool_id"),
    )
    op.create_index("tools_session", "tools", ["agent", "session_id", "ts"])
    op.create_index("tools_seq", "tools", ["seq"])
    op.create_table(
        "sessions", _source(),
        sa.Column("agent", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("cwd", sa.Text),
        sa.Column("parent", sa.Text),
        sa.Column("first_ts", sa.Double),
        sa.Column("last_ts", sa.Double),
        sa.Column("origin", sa.Text),
        sa.Column("seq", sa.BigInteger),
        sa.PrimaryKeyConstraint("capsule", "agent", "session_id"),
    )
    op.create_index("sessions_seq", "sessions", ["seq"])


def downgrade() -> None:
    for name in ("sessions", "tools", "calls", "emissions", "sync_cursors", "capsules"):
        op.drop_table(name)
