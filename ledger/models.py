"""The ledger: every model call, what it cost, and the budgets that limit spending."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from hyperguild.lib.model_calls import BODY_CAP


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

    BODY_CAP = BODY_CAP

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
    # (ledger.pricing.CostSource). An empty cost is never a silent 0.
    cost_source = models.CharField(max_length=20, blank=True, default="")
    redactions = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "hyperguild_modelcall"  # the table it had in the core (issue 49): moved, not copied
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
    a call must fit both (ledger.budgets).
    """

    person = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="budget")
    daily_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    monthly_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)

    class Meta:
        db_table = "hyperguild_personbudget"  # the table it had in the core (issue 49): moved, not copied

    def __str__(self) -> str:
        return f"budget of {self.person}"


class BudgetReservation(models.Model):
    """What a model call about to be made may cost, held until its ModelCall is recorded.

    Concurrent calls see each other's reservations, so together they cannot overshoot a budget by
    more than one call's estimate (ledger.budgets.reserve). A reservation left behind by a
    crashed process stops counting after RESERVATION_TTL.
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    amount_usd = models.DecimalField(max_digits=12, decimal_places=6)
    what = models.CharField(max_length=200)

    class Meta:
        db_table = "hyperguild_budgetreservation"  # the table it had in the core (issue 49): moved, not copied

    def __str__(self) -> str:
        return f"{self.what}: {self.amount_usd} USD"
