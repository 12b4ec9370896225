"""Admin for the service's own records."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from hyperguild.actions import do_revoke_personal_token
from hyperguild.admin_mixins import ReadOnlyAdminMixin
from hyperguild.models import (
    BudgetReservation,
    ClientRegistrationAttempt,
    CredentialUse,
    McpCancellation,
    McpTask,
    ModelCall,
    PersonalToken,
    PersonBudget,
    RedeemedAuthorizationCode,
    WorkerHeartbeat,
)


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    """Read-only: written by the worker's heartbeat task, read by /health."""

    list_display = ("name", "beat_at", "host", "pid")
    search_fields = ("name", "host")
    readonly_fields = ("name", "beat_at", "host", "pid")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(McpCancellation)
class McpCancellationAdmin(admin.ModelAdmin):
    """Read-only log of notifications/cancelled, shared between replicas; purged after a day."""

    list_display = ("endpoint", "request_id", "reason", "created_at")
    list_filter = ("endpoint",)
    search_fields = ("request_id", "reason")
    readonly_fields = ("endpoint", "request_id", "reason", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(McpTask)
class McpTaskAdmin(admin.ModelAdmin):
    """Read-only: MCP tasks (long skills run for clients that poll), written by the engine, expired after a day."""

    list_display = ("task_id", "endpoint", "tool", "status", "status_message", "created_at", "updated_at", "host")
    list_filter = ("endpoint", "status", "tool")
    search_fields = ("task_id", "tool", "status_message")
    readonly_fields = [field.name for field in McpTask._meta.fields if field.name != "owner"]
    exclude = ("owner",)  # a digest of a credential: nothing an operator needs to see

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(PersonalToken)
class PersonalTokenAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """People's tokens: only the prefix and a hash are stored. Revoke with the bulk action."""

    list_display = (
        "prefix",
        "name",
        "user",
        "scope_list",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
        "last_used_ip",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), ("user", admin.RelatedOnlyFieldListFilter))
    search_fields = ("prefix", "name", "user__username")
    list_select_related = ("user",)
    readonly_fields = (
        "user",
        "name",
        "prefix",
        "scopes",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
        "last_used_ip",
    )
    exclude = ("token_hash",)
    actions = ["revoke_tokens"]

    @admin.display(description="scopes")
    def scope_list(self, token: PersonalToken) -> str:
        return " ".join(token.scopes)

    @admin.action(description="Revoke the selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[PersonalToken]) -> None:
        for token in queryset:
            do_revoke_personal_token(token)
        self.message_user(request, f"Revoked {queryset.count()} token(s).")


@admin.register(CredentialUse)
class CredentialUseAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Audit: every request made with a person's token or an OAuth access token (who, which endpoint, when)."""

    list_display = ("at", "user", "kind", "credential", "method", "path", "address")
    list_filter = ("kind", ("user", admin.RelatedOnlyFieldListFilter))
    search_fields = ("user__username", "credential", "path", "address")
    list_select_related = ("user",)
    date_hierarchy = "at"
    readonly_fields = ("at", "user", "kind", "credential", "method", "path", "address")


@admin.register(ModelCall)
class ModelCallAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
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
class PersonBudgetAdmin(admin.ModelAdmin):
    """A person's own daily and monthly limits on model spend (USD, UTC days and months; empty: none)."""

    list_display = ("person", "daily_usd", "monthly_usd")
    search_fields = ("person__username", "person__email")
    list_select_related = ("person",)
    autocomplete_fields = ("person",)


@admin.register(BudgetReservation)
class BudgetReservationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Estimates held by model calls in flight (hyperguild.budgets.reserve); one older than an hour is ignored."""

    list_display = ("created_at", "person", "amount_usd", "what")
    search_fields = ("what", "person__username")
    list_select_related = ("person",)

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]


@admin.register(ClientRegistrationAttempt)
class ClientRegistrationAttemptAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """OAuth client registrations by address: what the per-address rate limit counts (kept an hour)."""

    list_display = ("at", "address")
    search_fields = ("address",)
    date_hierarchy = "at"

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]


@admin.register(RedeemedAuthorizationCode)
class RedeemedAuthorizationCodeAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Authorization codes already exchanged (their SHA-256 only); a replayed one revoked its tokens."""

    list_display = ("redeemed_at", "client_id", "replayed_at")
    list_filter = (("replayed_at", admin.EmptyFieldListFilter),)
    search_fields = ("client_id",)

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]
