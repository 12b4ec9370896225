# Joins three migrations written in parallel (change capture and redactions; pathways; run ownership);
# they add different fields and tables, so no operation is needed.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("supervisor", "0004_change_capture_and_redactions"),
        ("supervisor", "0004_pathway"),
        ("supervisor", "0004_run_ownership"),
    ]

    operations = []
