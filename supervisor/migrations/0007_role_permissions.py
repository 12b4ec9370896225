"""What the roles (hyperguild.roles) may do in this app."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {role: ['view_skillrun', 'view_routingentry'] for role in ('reader', 'reviewer', 'curator')}


def grant(apps, schema_editor):
    grant_permissions(apps, "supervisor", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "supervisor", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("supervisor", "0006_people"), ("hyperguild", "0005_roles")]
    operations = [migrations.RunPython(grant, revoke)]
