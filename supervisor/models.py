"""Skill runs: one row per skill call, with the worker's claim and the supervisor's verdict."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class SkillRunQuerySet(models.QuerySet):
    def for_skill(self, skill: str) -> SkillRunQuerySet:
        return self.filter(skill=skill)

    def finished(self) -> SkillRunQuerySet:
        return self.exclude(status__in=SkillRun.UNFINISHED)

    def in_session(self, session_id: str) -> SkillRunQuerySet:
        return self.filter(session_id=session_id)


class SkillRun(models.Model):
    """One call of a skill (on /mcp/supervisor or /mcp/routing).

    `worker_report` is what the worker says it did; `verified` is what the
    supervisor found when it checked for itself (None: nothing to verify, or
    not checked yet). The two are kept apart on purpose: the claim is
    evidence for training data, never the verdict.
    """

    QUEUED = "queued"
    RUNNING = "running"
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    STATUS_CHOICES = [
        (QUEUED, "queued"),
        (RUNNING, "running"),
        (PASS, "pass"),
        (FAIL, "fail"),
        (ERROR, "error"),
        (TIMEOUT, "timeout"),
        (CANCELLED, "cancelled"),
    ]
    UNFINISHED = (QUEUED, RUNNING)

    ENDPOINT_CHOICES = [("supervisor", "supervisor"), ("routing", "routing")]

    skill = models.CharField(max_length=40, db_index=True)
    tool = models.CharField(max_length=80, blank=True, default="")
    endpoint = models.CharField(max_length=20, choices=ENDPOINT_CHOICES, default="supervisor")
    arguments = models.JSONField(default=dict, blank=True)
    project_root = models.CharField(max_length=1000, blank=True, default="")
    route = models.CharField(max_length=40, blank=True, default="", help_text="fast / thinking / … (routing only)")
    model = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=12, choices=STATUS_CHOICES, default=QUEUED, db_index=True)
    verified = models.BooleanField(null=True, blank=True)
    worker_report = models.JSONField(null=True, blank=True, help_text="the worker's own claim (last attempt)")
    result = models.JSONField(null=True, blank=True, help_text="the result returned to the caller")
    runner_output = models.TextField(blank=True, default="", help_text="output of the supervisor's own check")
    exit_code = models.IntegerField(null=True, blank=True)
    stdout = models.TextField(blank=True, default="")
    stderr = models.TextField(blank=True, default="")
    duration_ms = models.IntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    attempt_log = models.JSONField(default=list, blank=True, help_text="each attempt: worker output + verification")
    message = models.TextField(blank=True, default="")
    progress = models.CharField(max_length=200, blank=True, default="", help_text="what the run is doing now")
    session_id = models.CharField(max_length=200, blank=True, default="", db_index=True)
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = SkillRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["skill", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.skill} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in self.UNFINISHED


class WorkerSlot(models.Model):
    """A seat in the pool of concurrent `claude` workers (SUPERVISOR_MAX_WORKERS seats).

    Workers in any process claim a free seat with a conditional UPDATE; a
    seat whose holder stopped heart-beating (crashed process) is free again
    after a grace period.
    """

    number = models.PositiveSmallIntegerField(unique=True)
    run = models.ForeignKey(SkillRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    holder = models.CharField(max_length=200, blank=True, default="")
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return f"slot {self.number} ({self.holder or 'free'})"
