"""The member role (hyperguild.roles): the ordinary teammate. The apps' migrations give it their permissions
(reading, and raw notes for review: brain.add_note); it holds none of the core's."""

from django.db import migrations


def make_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name="member")


def drop_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="member").delete()


class Migration(migrations.Migration):
    dependencies = [("hyperguild", "0009_budgets_and_costs")]
    operations = [migrations.RunPython(make_role, drop_role)]
