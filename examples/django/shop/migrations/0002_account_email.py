from django.db import migrations, models

LOG = "INSERT INTO migration_log VALUES ('0002', pg_backend_pid(), clock_timestamp())"
END = (
    "UPDATE migration_log SET ended = clock_timestamp()"
    " WHERE revision = '0002' AND pid = pg_backend_pid() AND ended IS NULL"
)


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]

    operations = [
        migrations.RunSQL(LOG, migrations.RunSQL.noop),
        migrations.AddField(
            model_name="account", name="email", field=models.TextField(null=True)
        ),
        migrations.RunSQL("SELECT pg_sleep(0.5)", migrations.RunSQL.noop),
        migrations.RunSQL(END, migrations.RunSQL.noop),
    ]
