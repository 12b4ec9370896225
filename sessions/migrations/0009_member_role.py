"""The member role sees sessions and training data as a reader does (its own sessions: sessions.actions)."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {"member": ["view_agentsession", "view_sessionentry", "view_trainingexample"]}


def grant(apps, schema_editor):
    grant_permissions(apps, "agent_sessions", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "agent_sessions", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("agent_sessions", "0008_retrospective_requested_by"), ("hyperguild", "0010_member_role")]
    operations = [migrations.RunPython(grant, revoke)]
