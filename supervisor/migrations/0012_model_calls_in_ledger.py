"""ModelCall moved to the ledger app (issue 49): the link tables keep pointing at the same table; state only."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ledger', '0001_initial'),
        ('supervisor', '0011_skillrun_task'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='routingentry',
                    name='model_calls',
                    field=models.ManyToManyField(blank=True, related_name='+', to='ledger.modelcall'),
                ),
                migrations.AlterField(
                    model_name='skillrun',
                    name='model_calls',
                    field=models.ManyToManyField(blank=True, related_name='+', to='ledger.modelcall'),
                ),
            ],
            database_operations=[],
        ),
    ]
