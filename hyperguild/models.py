"""Models that belong to the service itself rather than to an app."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class WorkerHeartbeat(models.Model):
    """The last time a django-q2 worker ran the heartbeat task.

    `/health` compares it with HYPERGUILD_WORKER_STALE_SECONDS: a stopped
    worker stops beating and the service reports itself unhealthy.
    """

    name = models.CharField(max_length=100, unique=True)
    beat_at = models.DateTimeField()
    host = models.CharField(max_length=255, blank=True)
    pid = models.IntegerField(null=True, blank=True)

    class Meta:
        # The service's own health and figures: held by the operator role (hyperguild.roles), used by /metrics.
        permissions = [("view_metrics", "Can see the service's metrics")]

    def __str__(self) -> str:
        return f"{self.name} @ {self.beat_at:%Y-%m-%d %H:%M:%S}"

    def age(self, now=None) -> timedelta:
        return (now or timezone.now()) - self.beat_at


class McpCancellation(models.Model):
    """A `notifications/cancelled` the service received, kept so that every replica sees it.

    MCP over HTTP is stateless here: the cancellation may reach a different
    replica than the one running the call. Each process with calls in flight
    polls this table (`hyperguild.mcp.cancellation`); rows are purged after a day.
    """

    endpoint = models.CharField(max_length=100)
    request_id = models.CharField(max_length=300)  # JSON of the JSON-RPC id: 7 and "7" differ
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["endpoint", "request_id"])]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.request_id}"


class McpTask(models.Model):
    """A tool call run as a task of the MCP Tasks extension (`hyperguild.mcp.tasks`).

    The row is the task: any replica answers `tasks/get` from it and records
    `tasks/cancel` on it, while the replica that accepted the call runs the
    tool in a thread and writes its progress and final result here. The
    handle is unguessable and bound to the caller's credentials (a digest,
    never the token), so one caller cannot read or cancel another's task.
    """

    WORKING = "working"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STATUSES = [(s, s) for s in (WORKING, COMPLETED, FAILED, CANCELLED)]
    TERMINAL = (COMPLETED, FAILED, CANCELLED)

    task_id = models.CharField(max_length=64, unique=True)
    endpoint = models.CharField(max_length=100)
    owner = models.CharField(max_length=64)  # digest of the caller's Authorization header
    tool = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=STATUSES, default=WORKING)
    status_message = models.CharField(max_length=500, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    host = models.CharField(max_length=255, blank=True)  # the replica that runs it
    pid = models.IntegerField(null=True, blank=True)
    alive_at = models.DateTimeField()  # the running replica's last sign of life (hyperguild.mcp.tasks)

    def __str__(self) -> str:
        return f"{self.endpoint} {self.tool} {self.task_id} {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL


class PersonalTokenQuerySet(models.QuerySet):
    def usable(self, now=None):
        """Not revoked and not expired: the tokens that still open a door."""
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now))


class PersonalToken(models.Model):
    """A person's own bearer token for the MCP endpoints and REST (hyperguild.auth).

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
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"

    def state(self, now=None) -> str:
        now = now or timezone.now()
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= now:
            return "expired"
        return "active"


class CredentialUse(models.Model):
    """One request made with a person's token or an OAuth access token: who, which endpoint, when.

    Written by hyperguild.auth when a bearer token checks out (the environment's service
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
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["user", "-at"])]

    def __str__(self) -> str:
        return f"{self.credential} {self.method} {self.path} @ {self.at:%Y-%m-%d %H:%M:%S}"


class ClientRegistrationAttempt(models.Model):
    """One call to the OAuth registration endpoint (RFC 7591) from an address: what its rate limit counts.

    Registration needs no credential (an MCP client registers before anyone signs in), so each address
    may try HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR times an hour; rows older than that are deleted as
    new ones come (hyperguild.actions.do_admit_client_registration).
    """

    address = models.GenericIPAddressField(null=True, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
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

    def __str__(self) -> str:
        return f"code for {self.client_id} redeemed @ {self.redeemed_at:%Y-%m-%d %H:%M:%S}"
