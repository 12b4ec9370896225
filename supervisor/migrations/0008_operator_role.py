"""Running skills (and the commands they take) is the operator role's (hyperguild.roles); it also sees runs."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {"operator": ["run_skill", "view_skillrun", "view_routingentry"]}


def grant(apps, schema_editor):
    grant_permissions(apps, "supervisor", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "supervisor", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("supervisor", "0007_role_permissions"), ("hyperguild", "0006_operator_role")]
    operations = [
        migrations.AlterModelOptions(
            name="skillrun",
            options={
                "ordering": ["-created_at"],
                "permissions": [("run_skill", "Can run skills and the commands they take (test_cmd, failing_cmd)")],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
