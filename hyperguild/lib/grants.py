"""Giving the roles (Django groups, people.roles) an app's permissions, in that app's data migrations."""

from __future__ import annotations

from django.apps.registry import Apps
from django.contrib.auth.management import create_permissions


def grant_permissions(apps: Apps, app_label: str, grants: dict[str, list[str]]) -> None:
    """In a data migration: give each role (group name) the app's permissions (codenames).

    Permissions are normally made after migrating (post_migrate); they are made here first so a
    fresh database gets its roles in the same `migrate`.
    """
    app_config = apps.get_app_config(app_label)
    if not getattr(app_config, "models_module", None):
        # A migration's app registry has no models module: create_permissions would skip it; it only tests truth.
        app_config.models_module = True  # type: ignore[assignment]  # a truthy marker, not a module
    create_permissions(app_config, apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in grants.items():
        group, _ = Group.objects.get_or_create(name=role)
        permissions = Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames)
        missing = set(codenames) - set(permissions.values_list("codename", flat=True))
        if missing:
            raise RuntimeError(f"{app_label}: no permission(s) {sorted(missing)} to grant to {role}")
        group.permissions.add(*permissions)


def revoke_permissions(apps: Apps, app_label: str, grants: dict[str, list[str]]) -> None:
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in grants.items():
        group = Group.objects.filter(name=role).first()
        if group is not None:
            group.permissions.remove(
                *Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames)
            )
