"""ModelCall moved to the ledger app (issue 49): the link table keeps pointing at the same table; state only."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0009_member_role'),
        ('ledger', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='retrospectiverun',
                    name='model_calls',
                    field=models.ManyToManyField(blank=True, related_name='+', to='ledger.modelcall'),
                ),
            ],
            database_operations=[],
        ),
    ]
