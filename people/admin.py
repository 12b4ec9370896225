"""Admin for people's credentials: tokens (revoked with a bulk action), their audit, the OAuth flow's records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from hyperguild.admin_mixins import ReadOnlyAdminMixin
from people.actions import do_revoke_personal_token
from people.models import ClientRegistrationAttempt, CredentialUse, PersonalToken, RedeemedAuthorizationCode

if TYPE_CHECKING:
    # ModelAdmin is generic only in django-stubs; at run time it takes no type arguments (pyproject.toml).
    PersonalTokenBase = admin.ModelAdmin[PersonalToken]
    CredentialUseBase = admin.ModelAdmin[CredentialUse]
    ClientRegistrationAttemptBase = admin.ModelAdmin[ClientRegistrationAttempt]
    RedeemedAuthorizationCodeBase = admin.ModelAdmin[RedeemedAuthorizationCode]
else:
    PersonalTokenBase = CredentialUseBase = ClientRegistrationAttemptBase = RedeemedAuthorizationCodeBase = (
        admin.ModelAdmin
    )


@admin.register(PersonalToken)
class PersonalTokenAdmin(ReadOnlyAdminMixin, PersonalTokenBase):
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
class CredentialUseAdmin(ReadOnlyAdminMixin, CredentialUseBase):
    """Audit: every request made with a person's token or an OAuth access token (who, which endpoint, when)."""

    list_display = ("at", "user", "kind", "credential", "method", "path", "address")
    list_filter = ("kind", ("user", admin.RelatedOnlyFieldListFilter))
    search_fields = ("user__username", "credential", "path", "address")
    list_select_related = ("user",)
    date_hierarchy = "at"
    readonly_fields = ("at", "user", "kind", "credential", "method", "path", "address")


@admin.register(ClientRegistrationAttempt)
class ClientRegistrationAttemptAdmin(ReadOnlyAdminMixin, ClientRegistrationAttemptBase):
    """OAuth client registrations by address: what the per-address rate limit counts (kept an hour)."""

    list_display = ("at", "address")
    search_fields = ("address",)
    date_hierarchy = "at"

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]


@admin.register(RedeemedAuthorizationCode)
class RedeemedAuthorizationCodeAdmin(ReadOnlyAdminMixin, RedeemedAuthorizationCodeBase):
    """Authorization codes already exchanged (their SHA-256 only); a replayed one revoked its tokens."""

    list_display = ("redeemed_at", "client_id", "replayed_at")
    list_filter = (("replayed_at", admin.EmptyFieldListFilter),)
    search_fields = ("client_id",)

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]
