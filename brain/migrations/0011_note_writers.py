"""Who may write notes through a token (brain:write): reviewers and curators hold brain.add_note; operators read."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {"reviewer": ["add_note"], "curator": ["add_note"], "operator": ["view_note"]}


def grant(apps, schema_editor):
    grant_permissions(apps, "brain", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "brain", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("brain", "0010_note_redactions"), ("hyperguild", "0006_operator_role")]
    operations = [migrations.RunPython(grant, revoke)]
