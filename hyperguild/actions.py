"""Writes that belong to the service itself."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django_q.models import Schedule

from hyperguild.contributions import schedules, task_queue
from hyperguild.models import McpCancellation, WorkerHeartbeat

if TYPE_CHECKING:
    from django.contrib.auth.models import User

HEARTBEAT_NAME = "qcluster"


@transaction.atomic
def do_record_worker_heartbeat(name: str = HEARTBEAT_NAME) -> WorkerHeartbeat:
    beat, _ = WorkerHeartbeat.objects.update_or_create(
        name=name,
        defaults={"beat_at": timezone.now(), "host": socket.gethostname(), "pid": os.getpid()},
    )
    return beat


@transaction.atomic
def do_ensure_schedules() -> list[str]:
    """Create or update the periodic django-q2 schedules the service needs.

    Each app registers (name, func, seconds) providers with
    `hyperguild.contributions.register_schedules`; running this twice changes nothing.
    """
    wanted: list[tuple[str, str, int]] = [
        ("hyperguild-heartbeat", "hyperguild.tasks.heartbeat", settings.HYPERGUILD_WORKER_HEARTBEAT_SECONDS),
        *schedules(),
    ]

    names = []
    for name, func, seconds in wanted:
        # django-q2 schedules count in minutes; sub-minute intervals round up.
        minutes = max(1, round(seconds / 60))
        Schedule.objects.update_or_create(
            name=name,
            defaults={
                "func": func,
                "schedule_type": Schedule.MINUTES,
                "minutes": minutes,
                "repeats": -1,
                "cluster": task_queue(func),
            },
        )
        names.append(name)
    return names


@transaction.atomic
def do_ensure_admin_account(username: str, password: str = "") -> tuple[User | None, str | None]:
    """Create a superuser if there is none.

    Returns (user, generated_password): the password is returned only when
    it was generated here, so the caller can print it once.
    """
    User = get_user_model()
    if User.objects.filter(is_superuser=True).exists():
        return None, None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(12)
    user = User.objects.create_superuser(username=username, email="", password=password)
    return user, generated


CANCELLATION_KEEP = timedelta(days=1)


@transaction.atomic
def do_record_mcp_cancellation(endpoint: str, request_id_json: str, reason: str = "") -> None:
    McpCancellation.objects.create(
        endpoint=endpoint, request_id=request_id_json[:300], reason=(reason or "")[:500], created_at=timezone.now()
    )


@transaction.atomic
def do_purge_mcp_cancellations() -> int:
    deleted, _ = McpCancellation.objects.filter(created_at__lt=timezone.now() - CANCELLATION_KEEP).delete()
    return deleted
