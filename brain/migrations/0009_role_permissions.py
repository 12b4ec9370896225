"""What the roles (hyperguild.roles) may do in this app."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {'reader': ['view_note'], 'reviewer': ['view_note', 'review_note'], 'curator': ['view_note']}


def grant(apps, schema_editor):
    grant_permissions(apps, "brain", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "brain", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("brain", "0008_people"), ("hyperguild", "0005_roles")]
    operations = [migrations.RunPython(grant, revoke)]
