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
