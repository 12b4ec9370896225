"""Models that belong to the service itself rather than to an app."""

from __future__ import annotations

from datetime import datetime, timedelta

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
        # The service's own health and figures: held by the operator role (people.roles), used by /metrics.
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
