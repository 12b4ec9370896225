"""The member role reads notes and writes raw notes for review (brain:write), but judges none (no review_note)."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {"member": ["view_note", "add_note"]}


def grant(apps, schema_editor):
    grant_permissions(apps, "brain", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "brain", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("brain", "0013_note_checks"), ("hyperguild", "0010_member_role")]
    operations = [migrations.RunPython(grant, revoke)]
