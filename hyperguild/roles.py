"""Roles are Django groups, made by migrations: what each may do is a set of permissions.

- `reader`: browse and search (the view permissions);
- `member`: the ordinary teammate: also raw notes for review (brain.add_note), their own sessions and the
  retrospectives of them; judges nothing;
- `reviewer`: promote, reject, merge, edit, re-file, demote notes and undo (brain.review_note);
- `curator`: approve, reject, edit, swap and export training examples (agent_sessions.curate_trainingexample);
- `operator`: run skills on /mcp/supervisor and /mcp/routing, with their commands (supervisor.run_skill), and
  see the service's metrics (hyperguild.view_metrics);
- staff (`is_staff`) may do all of it, and superusers hold every permission (the admin).

The core makes the groups (hyperguild migrations 0005, 0006 and 0010); each app's migration grants its own
permissions to them with `grant_permissions`, so the core names no app.
"""

from __future__ import annotations

from django.apps.registry import Apps
from django.contrib.auth.management import create_permissions

READER, MEMBER, REVIEWER, CURATOR, OPERATOR = "reader", "member", "reviewer", "curator", "operator"
ROLES = (READER, MEMBER, REVIEWER, CURATOR, OPERATOR)


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
