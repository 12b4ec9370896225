"""People's credentials: personal tokens, their uses, and the OAuth flow's own records."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class PersonalTokenQuerySet(models.QuerySet["PersonalToken"]):
    def usable(self, now: datetime | None = None) -> PersonalTokenQuerySet:
        """Not revoked and not expired: the tokens that still open a door."""
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class PersonalToken(models.Model):
    """A person's own bearer token for the MCP endpoints and REST (people.auth).

    Only a SHA-256 of the token is stored: the token itself is shown once, when
    it is made. `prefix` (the first characters, public) names it in lists and
    logs. Scopes say which doors it opens (`brain:read`, `brain:write`, …).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=50))
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(null=True, blank=True)

    objects = PersonalTokenQuerySet.as_manager()

    class Meta:
        db_table = "hyperguild_personaltoken"  # the table it had in the core (issue 49): moved, not copied
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"

    def state(self, now: datetime | None = None) -> str:
        now = now or timezone.now()
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= now:
            return "expired"
        return "active"


class CredentialUse(models.Model):
    """One request made with a person's token or an OAuth access token: who, which endpoint, when.

    Written by people.auth when a bearer token checks out (the environment's service
    tokens are not recorded: they name no person). Read-only in the admin.
    """

    class Kind(models.TextChoices):
        TOKEN = "token", "personal token"
        OAUTH = "oauth", "OAuth access token"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    credential = models.CharField(max_length=200, help_text="token prefix and name, or the OAuth client's name")
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=300)
    address = models.GenericIPAddressField(null=True, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "hyperguild_credentialuse"  # the table it had in the core (issue 49): moved, not copied
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["user", "-at"])]

    def __str__(self) -> str:
        return f"{self.credential} {self.method} {self.path} @ {self.at:%Y-%m-%d %H:%M:%S}"


class ClientRegistrationAttempt(models.Model):
    """One call to the OAuth registration endpoint (RFC 7591) from an address: what its rate limit counts.

    Registration needs no credential (an MCP client registers before anyone signs in), so each address
    may try HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR times an hour; rows older than that are deleted as
    new ones come (people.actions.do_admit_client_registration).
    """

    address = models.GenericIPAddressField(null=True, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "hyperguild_clientregistrationattempt"  # the table it had in the core (issue 49): moved, not copied
        indexes = [models.Index(fields=["address", "at"])]

    def __str__(self) -> str:
        return f"registration from {self.address} @ {self.at:%Y-%m-%d %H:%M:%S}"


class RedeemedAuthorizationCode(models.Model):
    """An OAuth authorization code already exchanged for tokens, and the tokens it gave.

    A code is good once (RFC 6749 §4.1.2): when it comes back, every token issued from it is revoked,
    since one of the two exchanges was not the client's. Only the code's SHA-256 is kept.
    """

    code_digest = models.CharField(max_length=64, unique=True)
    client_id = models.CharField(max_length=100)
    access_token_checksum = models.CharField(max_length=64, blank=True)
    token_family = models.UUIDField(null=True, blank=True)
    redeemed_at = models.DateTimeField(default=timezone.now, db_index=True)
    replayed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "hyperguild_redeemedauthorizationcode"  # the table it had in the core (issue 49): moved, not copied

    def __str__(self) -> str:
        return f"code for {self.client_id} redeemed @ {self.redeemed_at:%Y-%m-%d %H:%M:%S}"
