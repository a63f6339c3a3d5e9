"""add account.email

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 09:10:00

"""
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("INSERT INTO migration_log VALUES ('0002', pg_backend_pid(), clock_timestamp())")

    op.add_column("account", sa.Column("email", sa.Text))

    op.execute("SELECT pg_sleep(0.5)")
    op.execute("UPDATE migration_log SET ended = clock_timestamp() WHERE revision = '0002' AND pid = pg_backend_pid() AND ended IS NULL")


def downgrade() -> None:
    op.drop_column("account", "email")
    op.execute("DELETE FROM migration_log WHERE revision = '0002'")
