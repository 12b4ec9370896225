"""Admin building blocks every app may use (no app knowledge)."""

from __future__ import annotations


class ReadOnlyAdminMixin:
    """Records the service writes itself (logs, indexes, revisions): the admin shows them, nobody edits them."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class LogAdminMixin:
    """Logs the service writes (skill runs, routing decisions): every field shown read-only, nobody adds
    or edits a row, and only a superuser may delete one (to clear out old logs)."""

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser
