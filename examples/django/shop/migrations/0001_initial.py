from django.db import migrations, models

LOG = "INSERT INTO migration_log VALUES ('0001', pg_backend_pid(), clock_timestamp())"
END = (
    "UPDATE migration_log SET ended = clock_timestamp()"
    " WHERE revision = '0001' AND pid = pg_backend_pid() AND ended IS NULL"
)


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        migrations.RunSQL(
            "CREATE TABLE migration_log (revision text NOT NULL, pid integer NOT NULL,"
            " started timestamptz NOT NULL, ended timestamptz)",
            "DROP TABLE migration_log",
        ),
        migrations.RunSQL(LOG, migrations.RunSQL.noop),
        migrations.CreateModel(
            name="Account",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.TextField()),
            ],
        ),
        migrations.RunSQL("SELECT pg_sleep(0.5)", migrations.RunSQL.noop),
        migrations.RunSQL(END, migrations.RunSQL.noop),
    ]
