"""Admin building blocks every app may use (no app knowledge)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Generic, TypeVar

from django.contrib import admin
from django.db import models
from django.http import HttpRequest


class _GenericInStubs:
    """`ModelAdmin[Note]` at run time. Django's admin classes are generic only in django-stubs; django-stubs-ext's
    monkeypatch would give them `__class_getitem__` for the whole process (STYLE.md rule 14). Subscripted, this
    gives a `types.GenericAlias`, which a class statement turns back into Django's class (`__mro_entries__`):
    the admins' bases at run time are Django's own, and the type checker sees the model each admin shows."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __getitem__(self, model: object) -> types.GenericAlias:
        return types.GenericAlias(self.cls, model)


if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin, StackedInline, TabularInline
else:
    ModelAdmin = _GenericInStubs(admin.ModelAdmin)
    StackedInline = _GenericInStubs(admin.StackedInline)
    TabularInline = _GenericInStubs(admin.TabularInline)


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
