from django.contrib.postgres.operations import CreateExtension
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: list = []

    operations = [
        # pgvector: embeddings live in the one PostgreSQL database.
        CreateExtension("vector"),
        migrations.CreateModel(
            name="WorkerHeartbeat",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100, unique=True)),
                ("beat_at", models.DateTimeField()),
                ("host", models.CharField(blank=True, max_length=255)),
                ("pid", models.IntegerField(blank=True, null=True)),
            ],
        ),
    ]
