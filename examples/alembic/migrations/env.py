"""alembic's generic env.py, with zklock taking one lock around each deploy.

Everything between the "zklock" markers is what zklock adds; the rest is
alembic's template.  Deployers started at once on several hosts, against
one database or many, are serialised by the lock: the first applies the
revisions, the others wait and then read the version it committed, so
they find nothing to do.  zklock's doc/integrations.md explains the choices.
"""
from contextlib import contextmanager
from logging.config import fileConfig

from sqlalchemy import engine_from_config
from sqlalchemy import pool
from sqlalchemy import text

from alembic import context

config = context.config

if config.config_file_name is not None:
    fileConfig(config.config_file_name)

target_metadata = None

# -x name=value on the command line overrides the option of alembic.ini.
x_args = context.get_x_argument(as_dictionary=True)


def option(name, default=None):
    return x_args.get(name, config.get_main_option(name, default))


# --- zklock ---
ZKLOCK_LOCK = option("zklock_lock")
ZKLOCK_TIMEOUT = option("zklock_timeout") or None  # None: lock_timeout
PER_MIGRATION = option("transaction_per_migration", "false").lower() == "true"
# -x zklock=off runs without the lock.  Only for showing what goes wrong
# then (zklock's test does); never in a real deploy.
ZKLOCK_ON = option("zklock", "on") != "off"


def zklock_acquire(connection, function="zk_lock_acquire_xact"):
    """Wait for the deploy lock; in transaction scope by default."""
    if ZKLOCK_ON:
        connection.execute(
            text(f"SELECT {function}(:name, CAST(:timeout AS interval))"),
            {"name": ZKLOCK_LOCK, "timeout": ZKLOCK_TIMEOUT},
        )


@contextmanager
def zklock_session_lock(connection):
    """Hold the deploy lock in session scope around the whole run, for
    transaction_per_migration (each revision commits on its own)."""
    with connection.begin():
        zklock_acquire(connection, "zk_lock_acquire")
    try:
        yield
    finally:
        if ZKLOCK_ON:  # ending the session would release it too
            with connection.begin():
                connection.execute(
                    text("SELECT zk_lock_release(:name)"),
                    {"name": ZKLOCK_LOCK},
                )
# --- end zklock ---


def run_migrations_offline() -> None:
    """Offline mode (--sql) writes a script; zklock does not take part."""
    url = x_args.get("url") or config.get_main_option("sqlalchemy.url")
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )

    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    section = config.get_section(config.config_ini_section, {})
    if "url" in x_args:
        section["sqlalchemy.url"] = x_args["url"]
    connectable = engine_from_config(
        section,
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )

    with connectable.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            transaction_per_migration=PER_MIGRATION,
        )

        # --- zklock ---
        # alembic reads the current version inside run_migrations(), so
        # after the lock is held: a deployer that waited sees what the one
        # before it committed.
        if PER_MIGRATION:
            with zklock_session_lock(connection):
                with context.begin_transaction():
                    context.run_migrations()
        else:
            # All revisions in one transaction (alembic's default on
            # PostgreSQL); the lock is released when it commits or aborts.
            with context.begin_transaction():
                zklock_acquire(connection)
                context.run_migrations()
        # --- end zklock ---


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
