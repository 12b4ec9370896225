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
