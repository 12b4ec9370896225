"""The roles as Django groups (hyperguild.roles); the apps' migrations give them permissions."""

from django.db import migrations

ROLES = ("reader", "reviewer", "curator")


def make_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def drop_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("auth", "0012_alter_user_first_name_max_length"), ("hyperguild", "0004_people")]
    operations = [migrations.RunPython(make_roles, drop_roles)]
