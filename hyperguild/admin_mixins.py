"""Admin building blocks every app may use (no app knowledge)."""

from __future__ import annotations

from typing import Generic, TypeVar

from django.db import models
from django.http import HttpRequest


class ReadOnlyAdminMixin:
    """Records the service writes itself (logs, indexes, revisions): the admin shows them, nobody edits them."""

    def has_add_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False


_LoggedModel = TypeVar("_LoggedModel", bound=models.Model)


class LogAdminMixin(Generic[_LoggedModel]):
    """Logs the service writes (skill runs, routing decisions): every field shown read-only, nobody adds
    or edits a row, and only a superuser may delete one (to clear out old logs)."""

    model: type[_LoggedModel]  # set by the ModelAdmin this is mixed into

    def get_readonly_fields(self, request: HttpRequest, obj: models.Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return request.user.is_superuser
