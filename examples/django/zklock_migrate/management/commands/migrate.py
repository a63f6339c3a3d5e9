"""Django's migrate, with zklock taking one lock around it.

Django takes no lock of its own: two hosts running `manage.py migrate` at
once both read the applied migrations and both apply the missing ones.  Put
the app zklock_migrate first in INSTALLED_APPS: its migrate replaces
Django's, waits for the lock in session scope on the connection the
migrations run on, runs Django's migrate, and releases the lock.  A
deployer that waited reads the migrations its predecessor recorded and
applies nothing.  zklock's doc/integrations.md explains the choices.

Settings (settings.py):
  ZKLOCK_MIGRATE_LOCK     the lock's name (default "django-migrate:" and
                          the database's NAME; one name for every database
                          of the application serialises them fleet-wide)
  ZKLOCK_MIGRATE_TIMEOUT  how long to wait, an interval ("10min"); None:
                          the connection's lock_timeout
"""
from django.conf import settings
from django.core.management.commands.migrate import Command as MigrateCommand
from django.db import connections


class Command(MigrateCommand):
    help = MigrateCommand.help + " Holds a zklock lock while it runs."

    def handle(self, *args, **options):
        connection = connections[options["database"]]
        name = getattr(
            settings,
            "ZKLOCK_MIGRATE_LOCK",
            "django-migrate:" + str(connection.settings_dict["NAME"]),
        )
        timeout = getattr(settings, "ZKLOCK_MIGRATE_TIMEOUT", "10min")
        # Outside any transaction (Django's autocommit): the session-scope
        # lock is held until released below or until the session ends,
        # whatever the migrations commit, atomic=False ones included.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT zk_lock_acquire(%s, CAST(%s AS interval))", [name, timeout]
            )
        try:
            return super().handle(*args, **options)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT zk_lock_release(%s)", [name])
