"""What the roles (hyperguild.roles) may do in this app."""

from django.db import migrations

from hyperguild.lib.grants import grant_permissions, revoke_permissions

GRANTS = {role: ['view_agentsession', 'view_sessionentry', 'view_trainingexample'] for role in ('reader', 'reviewer', 'curator')} | {'curator': ['view_agentsession', 'view_sessionentry', 'view_trainingexample', 'curate_trainingexample']}


def grant(apps, schema_editor):
    grant_permissions(apps, "agent_sessions", GRANTS)


def revoke(apps, schema_editor):
    revoke_permissions(apps, "agent_sessions", GRANTS)


class Migration(migrations.Migration):
    dependencies = [("agent_sessions", "0004_people"), ("hyperguild", "0005_roles")]
    operations = [migrations.RunPython(grant, revoke)]
