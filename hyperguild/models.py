"""Models that belong to the service itself rather than to an app."""

from __future__ import annotations

from datetime import datetime, timedelta

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

    def age(self, now: datetime | None = None) -> timedelta:
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
    """A tool call that ran as a task in a thread of the replica that accepted it (before issue 49).

    Retired: no row is written any more. A long call started as a task is now its app's job record (a
    `SkillRun`, `supervisor.jobs`), which any replica reads, whichever one started it. The table stays until
    the rows of tasks started before that expire (the heartbeat purges them) and operators can read them in
    the admin; then a migration drops it.
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
    alive_at = models.DateTimeField()  # the running replica's last sign of life (hyperguild.mcp.mcp_tasks)

    def __str__(self) -> str:
        return f"{self.endpoint} {self.tool} {self.task_id} {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL


class PersonalTokenQuerySet(models.QuerySet):
    def usable(self, now: datetime | None = None) -> PersonalTokenQuerySet:
        """Not revoked and not expired: the tokens that still open a door."""
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


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

    def state(self, now: datetime | None = None) -> str:
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


class ModelCall(models.Model):
    """One call to a model: an LLM chat completion, a reranker judgement, a `claude` worker run.

    Written at the one outbound client of each protocol (`hyperguild.lib.model_calls.record_model_call`),
    success or failure, so a failed answer can be read and replayed. The core names no product
    concept: `skill`, `purpose`, `session_id` and `project` are plain text the caller supplies; the
    apps link their own records (a run, a routing entry) to the call, not the other way round.

    `outcome` separates the model from the infrastructure: an `outage` (connection refused, timeout,
    5xx/429 after the retries, open circuit) says nothing about the model and never counts against it.
    Request and raw response are redacted (hyperguild.lib.redaction) and capped at BODY_CAP characters.
    `input_tokens`, `output_tokens` and `cost_usd` are filled when the server reports usage (cost: later).
    """

    class Outcome(models.TextChoices):
        OK = "ok", "ok"
        MODEL_ERROR = "model_error", "model error: the server refused the request (4xx: unknown model, bad key)"
        TRUNCATED = "truncated", "truncated: cut at the token limit"
        OUTAGE = "outage", "outage: unreachable, timed out or 5xx (not the model's fault)"
        BAD_OUTPUT = "bad_output", "bad output: not JSON, wrong shape, failed a check, degenerate"

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible chat completions"
        OLLAMA = "ollama", "Ollama generate"
        CLAUDE = "claude", "claude process"

    BODY_CAP = 100_000

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Who: a person (their token made the call) or, when none, the service part that made it.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    service = models.CharField(max_length=100, blank=True, default="", help_text="the caller when no person is")
    session_id = models.CharField(max_length=200, blank=True, default="", db_index=True)
    project = models.CharField(max_length=1000, blank=True, default="")
    skill = models.CharField(max_length=80, blank=True, default="", db_index=True, help_text="skill or tool")
    purpose = models.CharField(
        max_length=40, blank=True, default="", help_text="answer, retrospective, review, trainer, debug, rerank, …"
    )
    provider = models.CharField(max_length=10, choices=Provider.choices)
    endpoint = models.CharField(max_length=500, help_text="the URL (no credentials) or command called")
    model = models.CharField(max_length=200)
    max_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="the generation limit sent")
    request = models.JSONField(null=True, blank=True, help_text="the body sent (redacted, capped)")
    response = models.TextField(blank=True, default="", help_text="the server's raw body (redacted, capped)")
    outcome = models.CharField(max_length=12, choices=Outcome.choices, db_index=True)
    error = models.TextField(blank=True, default="")
    status_code = models.PositiveIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=40, blank=True, default="")
    latency_ms = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    # How cost_usd was found, or why it is empty: reported, price table, price unknown, usage unknown
    # (hyperguild.lib.pricing.CostSource). An empty cost is never a silent 0.
    cost_source = models.CharField(max_length=20, blank=True, default="")
    redactions = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["model", "-created_at"], name="modelcall_model_recent")]

    def __str__(self) -> str:
        return f"{self.purpose or self.skill or 'call'} → {self.model} ({self.outcome})"

    @property
    def counts_against_model(self) -> bool:
        """False for an outage: the model never got the chance to answer."""
        return self.outcome != self.Outcome.OUTAGE


class PersonBudget(models.Model):
    """A person's own spending limits on model calls, in USD (days and months in UTC). Empty: no limit.

    The service's limits are settings (HYPERGUILD_BUDGET_DAILY_USD, HYPERGUILD_BUDGET_MONTHLY_USD);
    a call must fit both (hyperguild.budgets).
    """

    person = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="budget")
    daily_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    monthly_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)

    def __str__(self) -> str:
        return f"budget of {self.person}"


class BudgetReservation(models.Model):
    """What a model call about to be made may cost, held until its ModelCall is recorded.

    Concurrent calls see each other's reservations, so together they cannot overshoot a budget by
    more than one call's estimate (hyperguild.budgets.reserve). A reservation left behind by a
    crashed process stops counting after RESERVATION_TTL.
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    amount_usd = models.DecimalField(max_digits=12, decimal_places=6)
    what = models.CharField(max_length=200)

    def __str__(self) -> str:
        return f"{self.what}: {self.amount_usd} USD"
