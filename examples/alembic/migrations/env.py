"""alembic's generic env.py, with zklock taking one lock around each deploy.

Everything between the "zklock" markers is what zklock adds; the rest is
alembic's template.  Deployers started at once on several hosts, against
one database or many, are serialised by the lock: the first applies the
revisions, the others wait and then read the version it committed, so
they find nothing to do.  zklock's doc/integrations.md explains the choices.
"""
import time
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
# session: the lock is held from before the first revision to after the
# last commit, whatever the revisions commit in between (autocommit_block()
# for CREATE INDEX CONCURRENTLY commits alembic's transaction).
# transaction: the lock goes with alembic's transaction; a revision that
# commits it fails the deploy (see zklock_still_held).
ZKLOCK_SCOPE = option("zklock_scope", "session")
if ZKLOCK_SCOPE not in ("session", "transaction"):
    raise ValueError(f"zklock_scope must be session or transaction, not {ZKLOCK_SCOPE!r}")
# queue: wait in zk_lock_acquire, in ZooKeeper's queue.  poll: try every
# half second, holding no snapshot in between, for revisions that run
# CREATE INDEX CONCURRENTLY (it waits for every transaction of the database
# with an older snapshot, a queued deployer's too: a deadlock).
ZKLOCK_WAIT = option("zklock_wait", "queue")
if ZKLOCK_WAIT not in ("queue", "poll"):
    raise ValueError(f"zklock_wait must be queue or poll, not {ZKLOCK_WAIT!r}")
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


def zklock_poll(connection):
    """zklock_wait = poll: zk_lock_try every half second, each in a short
    transaction of its own, until zklock_timeout (none: lock_timeout)."""
    with connection.begin():
        limit = connection.execute(
            text(
                "SELECT extract(epoch FROM coalesce(CAST(:timeout AS interval),"
                " CAST(current_setting('lock_timeout') AS interval)))"
            ),
            {"timeout": ZKLOCK_TIMEOUT},
        ).scalar()
    deadline = time.monotonic() + float(limit) if limit and limit > 0 else None
    while True:
        with connection.begin():
            if connection.execute(
                text("SELECT zk_lock_try(:name)"), {"name": ZKLOCK_LOCK}
            ).scalar():
                return
        if deadline is not None and time.monotonic() >= deadline:
            raise RuntimeError(
                f"zklock: could not obtain the lock {ZKLOCK_LOCK!r} "
                f"within {ZKLOCK_TIMEOUT or 'lock_timeout'}"
            )
        time.sleep(0.5)


@contextmanager
def zklock_session_lock(connection):
    """Hold the deploy lock in session scope around the whole run: taken
    and released in transactions of their own, so that whatever the
    revisions commit in between, the lock stays."""
    if ZKLOCK_ON and ZKLOCK_WAIT == "poll":
        zklock_poll(connection)
    else:
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


def zklock_still_held(ctx, step, heads, run_args):
    """In transaction scope, after each revision (alembic's
    on_version_apply, inside the revision's transaction): fail the deploy,
    rolling that transaction back, if this session no longer holds the
    lock: a revision committed alembic's transaction (autocommit_block()),
    the lock went with it, and the revisions after it would run unguarded."""
    if not ZKLOCK_ON:
        return
    held = ctx.connection.execute(
        text("SELECT zk_lock_token(:name) IS NOT NULL"), {"name": ZKLOCK_LOCK}
    ).scalar()
    if not held:
        raise RuntimeError(
            f"zklock: the lock {ZKLOCK_LOCK!r} was released during revision "
            f"{step.up_revision_id}: it committed alembic's transaction "
            "(autocommit_block()?), which ended the transaction-scope lock; "
            "run with zklock_scope = session"
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
            # --- zklock ---
            on_version_apply=(
                [zklock_still_held] if ZKLOCK_SCOPE == "transaction" else []
            ),
            # --- end zklock ---
        )

        # --- zklock ---
        # alembic reads the current version inside run_migrations(), so
        # after the lock is held: a deployer that waited sees what the one
        # before it committed.
        if ZKLOCK_SCOPE == "session" or PER_MIGRATION:
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
