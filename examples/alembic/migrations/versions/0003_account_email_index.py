"""index account.email

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 09:20:00

"""
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("INSERT INTO migration_log VALUES ('0003', pg_backend_pid(), clock_timestamp())")

    op.create_index("account_email", "account", ["email"], unique=True)

    op.execute("SELECT pg_sleep(0.5)")
    op.execute("UPDATE migration_log SET ended = clock_timestamp() WHERE revision = '0003' AND pid = pg_backend_pid() AND ended IS NULL")


def downgrade() -> None:
    op.drop_index("account_email", table_name="account")
    op.execute("DELETE FROM migration_log WHERE revision = '0003'")
