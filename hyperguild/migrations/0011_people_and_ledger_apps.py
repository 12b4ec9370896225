"""People's and the ledger's models leave the core (issue 49): the tables stay, Django's record of them moves.

people.0001 and ledger.0001 take the models into their apps' state, the other apps' links to ModelCall are
re-pointed (state only), and only then does the core let them go, so at no point is a link left pointing
at a model no app holds. The tables keep their names (`db_table`), so no row is copied or lost.

The content types move with them (hyperguild.modelcall -> ledger.modelcall, ...), so every permission
(`hyperguild.view_modelcall` becomes `ledger.view_modelcall`), every role's grant of it and the admin's
history stay attached to the same rows.
"""

from django.db import migrations

MOVED = {
    "people": ["personaltoken", "credentialuse", "clientregistrationattempt", "redeemedauthorizationcode"],
    "ledger": ["modelcall", "personbudget", "budgetreservation"],
}


def move_content_types(apps, schema_editor, source="hyperguild", backwards=False):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for app, models in MOVED.items():
        old, new = (app, source) if backwards else (source, app)
        for model in models:
            # A content type the new app already has (made by a `migrate` that stopped half-way) is left as it
            # is: the old one, which the permissions and grants point at, would clash with it.
            if not ContentType.objects.filter(app_label=new, model=model).exists():
                ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, backwards=True)


class Migration(migrations.Migration):

    dependencies = [
        ("hyperguild", "0010_member_role"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("people", "0001_initial"),
        ("ledger", "0001_initial"),
        ("supervisor", "0012_model_calls_in_ledger"),
        ("agent_sessions", "0010_model_calls_in_ledger"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='budgetreservation',
                    name='person',
                ),
                migrations.DeleteModel(
                    name='ClientRegistrationAttempt',
                ),
                migrations.RemoveField(
                    model_name='credentialuse',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='modelcall',
                    name='requested_by',
                ),
                migrations.RemoveField(
                    model_name='personaltoken',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='personbudget',
                    name='person',
                ),
                migrations.DeleteModel(
                    name='RedeemedAuthorizationCode',
                ),
                migrations.DeleteModel(
                    name='BudgetReservation',
                ),
                migrations.DeleteModel(
                    name='CredentialUse',
                ),
                migrations.DeleteModel(
                    name='ModelCall',
                ),
                migrations.DeleteModel(
                    name='PersonalToken',
                ),
                migrations.DeleteModel(
                    name='PersonBudget',
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
