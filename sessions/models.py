"""Session logs, retrospective runs and training examples.

A session is what a client calls `session_id`; its entries are append-only
and numbered 1, 2, 3… per session with no gaps (see `do_log_entry`). A
database trigger (migration 0002) refuses UPDATE on entries, so "never
edited" does not depend on every caller behaving.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q


class AgentSession(models.Model):
    external_id = models.CharField(max_length=200, unique=True, help_text="The session_id clients pass.")
    # The brain Project its cwd resolved to (replaces the folder-name text field of before; docs/truth.md).
    project = models.ForeignKey(
        "brain.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions"
    )
    project_root = models.CharField(max_length=1000, blank=True)
    client = models.JSONField(default=dict, blank=True)
    # The person whose token logged the session's first attributed entry (None: the service identity).
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The last sequence number handed out; raised under a row lock.
    last_seq = models.PositiveIntegerField(default=0)
    # How an imported `.jsonl` file was laid out (trailing newline, blank
    # lines), so an export reproduces it byte for byte.
    file_layout = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.external_id


class EntrySource(models.TextChoices):
    MCP = "mcp", "MCP session_log"
    REST = "rest", "REST"
    IMPORT = "import", "imported file"
    INTERNAL = "internal", "internal"


class SessionEntryQuerySet(models.QuerySet["SessionEntry"]):
    def for_session(self, external_id: str) -> SessionEntryQuerySet:
        return self.filter(session__external_id=external_id).order_by("seq")


class SessionEntry(models.Model):
    """One structured event of a session; written once, never edited."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="entries")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=64)
    skill = models.CharField(max_length=100, blank=True)
    phase = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    data = models.JSONField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    source = models.CharField(max_length=16, choices=EntrySource.choices, default=EntrySource.MCP)
    # For imported entries: the original line exactly as it was in the file
    # (jsonb reorders keys and normalises spacing, so `data` alone cannot
    # reproduce the bytes). Empty for entries logged through the service.
    raw_line = models.TextField(blank=True)
    # Secrets taken out before storing: [{field, pattern, count}] (sessions.redaction).
    redactions = models.JSONField(default=list, blank=True)
    occurred_at = models.DateTimeField(null=True, blank=True)
    # The username of the person whose token logged it (empty: the service identity). A name, not a
    # foreign key: entries are never updated (a trigger refuses it), so nothing may SET NULL on them.
    logged_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = SessionEntryQuerySet.as_manager()

    class Meta:
        ordering = ["session_id", "seq"]
        verbose_name_plural = "session entries"
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="sessionentry_seq_unique"),
            models.UniqueConstraint(
                fields=["session", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="sessionentry_idempotency_unique",
            ),
            models.CheckConstraint(condition=Q(seq__gte=1), name="sessionentry_seq_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.kind}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ValueError("Session entries are append-only; they are never edited.")
        super().save(*args, **kwargs)


class RetrospectiveRun(models.Model):
    """One retrospective over one session: what it proposed and what it wrote."""

    class Method(models.TextChoices):
        RULES = "rules", "rules"
        LLM = "llm", "LLM"

    class Status(models.TextChoices):
        OK = "ok", "ok"
        MALFORMED = "malformed", "malformed model answer"
        ERROR = "error", "error"

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="retrospectives")
    method = models.CharField(max_length=16, choices=Method.choices)
    model = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    message = models.TextField(blank=True)
    # [{title, body, kind, evidence, dedupe_key, outcome: written|exists|merge, note_slug?, merge_into?}]
    learnings = models.JSONField(default=list, blank=True)
    notes_written = models.JSONField(default=list, blank=True)
    # Secrets taken out of the learnings before storing: [{field, pattern, count}].
    redactions = models.JSONField(default=list, blank=True)
    # The model's own text when its answer was refused (malformed), so it can be read and replayed.
    model_output = models.TextField(blank=True, default="")
    model_calls = models.ManyToManyField("ledger.ModelCall", blank=True, related_name="+")
    # The person whose request caused it: who called the skill, or the session's owner for one a hook queued
    # (None: the service identity). Its model calls are charged to them (ledger.budgets).
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"retrospective {self.session_id} {self.method} {self.status}"


class TrainingExampleQuerySet(models.QuerySet["TrainingExample"]):
    def candidates(self) -> TrainingExampleQuerySet:
        return self.filter(status=TrainingExample.Status.CANDIDATE)

    def approved(self) -> TrainingExampleQuerySet:
        return self.filter(status=TrainingExample.Status.APPROVED)


class TrainingExample(models.Model):
    """An SFT or DPO candidate, in chat-message form, with where it came from.

    SFT uses `prompt` + `completion`; DPO uses `prompt` + `chosen` + `rejected`.
    Each is a list of `{"role", "content"}` messages.
    """

    class Kind(models.TextChoices):
        SFT = "sft", "SFT"
        DPO = "dpo", "DPO"

    class ReplayStatus(models.TextChoices):
        PENDING = "pending", "not replayed yet"
        VALID = "valid", "replays"
        INVALID = "invalid", "does not replay"
        NOT_APPLICABLE = "n/a", "nothing to replay (no recorded change)"

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "candidate"
        APPROVED = "approved", "approved"
        REJECTED = "rejected", "rejected"

    kind = models.CharField(max_length=8, choices=Kind.choices, db_index=True)
    skill = models.CharField(max_length=100, blank=True, db_index=True)
    prompt = models.JSONField(default=list)
    completion = models.JSONField(default=list, blank=True)
    chosen = models.JSONField(default=list, blank=True)
    rejected = models.JSONField(default=list, blank=True)
    # {session_id, runs: [ids], models: [...], verification: {...}, origin: "skill_runs|routing"}
    provenance = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CANDIDATE, db_index=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)
    # [{at, by, action, changes: {field: {before, after}}}]
    edits = models.JSONField(default=list, blank=True)
    flagged = models.BooleanField(default=False, db_index=True)
    # Why it is flagged, e.g. [{"field": "prompt", "pattern": "aws_access_key", "count": 1}]
    flags = models.JSONField(default=list, blank=True)
    # Replay (`trainer_verify`): pending until checked; invalid examples are left out of exports by default.
    replay_status = models.CharField(
        max_length=12, choices=ReplayStatus.choices, default=ReplayStatus.PENDING, db_index=True
    )
    # {checked_at, reason, sides: {completion|chosen|rejected: {applied, exit_code, outcome, output, ok, why}}}
    replay = models.JSONField(default=dict, blank=True)
    # What the example was extracted from, so extraction is idempotent.
    source_key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TrainingExampleQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        # The curator role (docs/people.md): the group of that name holds it.
        permissions = [("curate_trainingexample", "Can approve, reject, edit, swap and export training examples")]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["sft", "dpo"]), name="trainingexample_kind_valid"),
            models.CheckConstraint(
                condition=Q(status__in=["candidate", "approved", "rejected"]), name="trainingexample_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.source_key} ({self.status})"
