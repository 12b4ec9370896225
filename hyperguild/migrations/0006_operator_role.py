"""The operator role (hyperguild.roles): a group, and the core's own permission it holds (the service's metrics).

The supervisor's migration gives it `supervisor.run_skill` (running skills and their commands).
"""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {"operator": ["view_metrics"]}


def grant(apps, schema_editor):
    grant_permissions(apps, "hyperguild", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "hyperguild", GRANTS)
    apps.get_model("auth", "Group").objects.filter(name="operator").delete()


class Migration(migrations.Migration):
    dependencies = [("hyperguild", "0005_roles")]
    operations = [
        migrations.AlterModelOptions(
            name="workerheartbeat",
            options={"permissions": [("view_metrics", "Can see the service's metrics")]},
        ),
        migrations.RunPython(grant, revoke),
    ]
