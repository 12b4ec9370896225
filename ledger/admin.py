"""Admin for the ledger: every model call (read-only), people's budgets and the budgets' reservations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from hyperguild.admin_mixins import ReadOnlyAdminMixin
from ledger.models import BudgetReservation, ModelCall, PersonBudget

if TYPE_CHECKING:
    # ModelAdmin is generic only in django-stubs; at run time it takes no type arguments (pyproject.toml).
    ModelCallBase = admin.ModelAdmin[ModelCall]
    PersonBudgetBase = admin.ModelAdmin[PersonBudget]
    BudgetReservationBase = admin.ModelAdmin[BudgetReservation]
else:
    ModelCallBase = PersonBudgetBase = BudgetReservationBase = admin.ModelAdmin


@admin.register(ModelCall)
class ModelCallAdmin(ReadOnlyAdminMixin, ModelCallBase):
    """Every call to a model, success or failure, with what was sent and what came back (redacted, capped)."""

    list_display = (
        "created_at",
        "purpose",
        "skill",
        "model",
        "provider",
        "outcome",
        "finish_reason",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "cost_source",
        "requested_by",
        "service",
        "session_id",
    )
    list_filter = ("outcome", "provider", "purpose", "model", "cost_source", "skill")
    search_fields = ("model", "skill", "purpose", "session_id", "project", "error", "service", "requested_by__username")
    list_select_related = ("requested_by",)
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]


@admin.register(PersonBudget)
class PersonBudgetAdmin(PersonBudgetBase):
    """A person's own daily and monthly limits on model spend (USD, UTC days and months; empty: none)."""

    list_display = ("person", "daily_usd", "monthly_usd")
    search_fields = ("person__username", "person__email")
    list_select_related = ("person",)
    autocomplete_fields = ("person",)


@admin.register(BudgetReservation)
class BudgetReservationAdmin(ReadOnlyAdminMixin, BudgetReservationBase):
    """Estimates held by model calls in flight (ledger.budgets.reserve); one older than an hour is ignored."""

    list_display = ("created_at", "person", "amount_usd", "what")
    search_fields = ("what", "person__username")
    list_select_related = ("person",)

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]
