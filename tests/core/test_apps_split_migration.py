"""Issue 49: people's and the ledger's models leave the core without losing a row.

A database migrated to the schema before the split holds a person's token, its audit, a model call linked to a
retrospective, a budget, and a role granted the permission to view model calls; migrated forward, the same rows
are read through the new apps (people.models, ledger.models), the link still holds, and the role's grant is now
`ledger.view_modelcall`.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

# The schema as the core held everything: the new apps not yet there, the links still to hyperguild.ModelCall.
BEFORE = [
    ("hyperguild", "0010_member_role"),
    ("supervisor", "0011_skillrun_task"),
    ("agent_sessions", "0009_member_role"),
    ("people", None),
    ("ledger", None),
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([target for target in targets if target[1] is not None]).apps


def migrate_to_newest():
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    targets = executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture(autouse=True)
def _back_to_the_newest_schema():
    """Whatever happens, the next test finds every migration applied."""
    yield
    migrate_to_newest()


def test_tokens_model_calls_budgets_and_grants_survive_the_move_to_the_new_apps():
    old = migrate(BEFORE)
    assert "people" not in {model._meta.app_label for model in old.get_models()}
    User = old.get_model("auth", "User")
    OldGroup = old.get_model("auth", "Group")
    OldPermission = old.get_model("auth", "Permission")
    OldContentType = old.get_model("contenttypes", "ContentType")
    person = User.objects.create(username="ana", is_active=True)
    token = old.get_model("hyperguild", "PersonalToken").objects.create(
        user=person, name="laptop", prefix="hgp_12345678", token_hash="a" * 64, scopes=["brain:read"]
    )
    old.get_model("hyperguild", "CredentialUse").objects.create(
        user=person, kind="token", credential="hgp_12345678 (laptop)", method="POST", path="/mcp/brain"
    )
    call = old.get_model("hyperguild", "ModelCall").objects.create(
        requested_by=person, provider="openai", endpoint="http://gw/v1", model="fast", outcome="ok", cost_usd="0.0125"
    )
    old.get_model("hyperguild", "PersonBudget").objects.create(person=person, daily_usd="2.50")
    session = old.get_model("agent_sessions", "AgentSession").objects.create(external_id="s-1")
    run = old.get_model("agent_sessions", "RetrospectiveRun").objects.create(
        session=session, method="llm", status="done"
    )
    run.model_calls.add(call)
    # A grant made before the move, of the core's permission (made by `migrate` on an install of that time).
    modelcall_type, _ = OldContentType.objects.get_or_create(app_label="hyperguild", model="modelcall")
    view_calls, _ = OldPermission.objects.get_or_create(
        content_type=modelcall_type, codename="view_modelcall", defaults={"name": "Can view model call"}
    )
    auditors = OldGroup.objects.create(name="auditors")
    auditors.permissions.add(view_calls)
    person.groups.add(auditors)

    migrate_to_newest()

    # Read back through the new apps' own models, as the running service does.
    from ledger.models import ModelCall, PersonBudget
    from people.models import CredentialUse, PersonalToken
    from sessions.models import RetrospectiveRun

    assert PersonalToken._meta.app_label == "people" and ModelCall._meta.app_label == "ledger"
    moved = PersonalToken.objects.get(pk=token.pk)
    assert (moved.user.username, moved.name, moved.prefix, moved.scopes) == (
        "ana",
        "laptop",
        "hgp_12345678",
        ["brain:read"],
    )
    assert moved.state() == "active"
    assert CredentialUse.objects.get(user__username="ana").path == "/mcp/brain"
    moved_call = ModelCall.objects.get(pk=call.pk)
    assert (moved_call.model, str(moved_call.cost_usd), moved_call.requested_by.username) == ("fast", "0.012500", "ana")
    assert str(PersonBudget.objects.get(person__username="ana").daily_usd) == "2.50"
    assert list(RetrospectiveRun.objects.get(pk=run.pk).model_calls.values_list("pk", flat=True)) == [call.pk]
    # The grant followed its content type: the same permission row, now the ledger's.
    grant = Group.objects.get(name="auditors").permissions.get()
    assert (grant.pk, grant.content_type.app_label, grant.codename) == (view_calls.pk, "ledger", "view_modelcall")
    assert get_user_model().objects.get(username="ana").has_perm("ledger.view_modelcall")


def test_migrating_back_returns_the_rows_to_the_core():
    """The move is reversible: back to the old schema, the core's models read the same rows again."""
    migrate_to_newest()
    from ledger.models import ModelCall

    call = ModelCall.objects.create(provider="ollama", endpoint="http://ollama", model="small", outcome="outage")
    old = migrate(BEFORE)
    assert old.get_model("hyperguild", "ModelCall").objects.get(pk=call.pk).outcome == "outage"
