"""Settings of zklock's Django example (test/t/114_django_migrate.pl runs
it): the database from the environment, the app whose migrate takes the
lock first, one app with migrations."""
import os

SECRET_KEY = "zklock-example-not-secret"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "zklock_migrate",  # first: its migrate replaces Django's
    "shop",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("PGDATABASE", "app"),
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
        "USER": os.environ.get("PGUSER", ""),
        "OPTIONS": {"application_name": os.environ.get("PGAPPNAME", "django-migrate")},
    }
}

# --- zklock ---
ZKLOCK_MIGRATE_LOCK = "myapp-schema"
ZKLOCK_MIGRATE_TIMEOUT = "10min"
# --- end zklock ---
