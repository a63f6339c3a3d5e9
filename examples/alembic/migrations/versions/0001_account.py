"""create table account

Revision ID: 0001
Revises:
Create Date: 2026-11-23 09:00:00

The three revisions here are small schema changes.  Each also writes one
row to migration_log (which backend applied it, and when it started and
ended) and sleeps half a second standing in for a slow change: zklock's test
reads that table to see that each revision was applied once, in order, and
that no two deploys overran each other.
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "migration_log",
        sa.Column("revision", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended", sa.DateTime(timezone=True)),
    )
    op.execute("INSERT INTO migration_log VALUES ('0001', pg_backend_pid(), clock_timestamp())")

    op.create_table(
        "account",
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
    )

    op.execute("SELECT pg_sleep(0.5)")
    op.execute("UPDATE migration_log SET ended = clock_timestamp() WHERE revision = '0001' AND pid = pg_backend_pid() AND ended IS NULL")


def downgrade() -> None:
    op.drop_table("account")
    op.drop_table("migration_log")
