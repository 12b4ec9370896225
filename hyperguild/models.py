"""Models that belong to the service itself rather than to an app."""

from __future__ import annotations

from datetime import timedelta

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

    def __str__(self) -> str:
        return f"{self.name} @ {self.beat_at:%Y-%m-%d %H:%M:%S}"

    def age(self, now=None) -> timedelta:
        return (now or timezone.now()) - self.beat_at
