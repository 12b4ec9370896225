"""The member role sees skill runs and routing as a reader does; running skills stays the operator's."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {"member": ["view_skillrun", "view_routingentry"]}


def grant(apps, schema_editor):
    grant_permissions(apps, "supervisor", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "supervisor", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("supervisor", "0009_model_calls_and_outage_status"), ("hyperguild", "0010_member_role")]
    operations = [migrations.RunPython(grant, revoke)]
