"""/health and /health/live: whether the service, its database and its worker are well."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Min
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django_q.conf import Conf
from django_q.models import OrmQ

from hyperguild.actions import HEARTBEAT_NAME
from hyperguild.lib.db_pool import database_version
from hyperguild.lib.http import breaker_states
from hyperguild.lib.llm import gateway_status
from hyperguild.lib.typed import JSON
from hyperguild.models import WorkerHeartbeat
from ledger.budgets import budget_states
from observability.health import health_sections

logger = logging.getLogger("hyperguild.health")


def live(request: HttpRequest) -> JsonResponse:
    """Liveness for a load balancer: the process answers, nothing else is checked (no database query).

    Also the bare JSON view the load benchmark compares an MCP ping with.
    """
    return JsonResponse({"ok": True})


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    """Database, worker heartbeat and version; 200 when all is well, else 503."""
    report: JSON = {"version": settings.VERSION, "time": timezone.now().isoformat()}
    try:
        # A short checkout of its own: a pool still reconnecting after an outage makes /health say
        # so at once instead of waiting out the pool's timeout (hyperguild.lib.db_pool).
        report["database"] = {"ok": True, "vector": database_version()}
    except Exception as exc:  # the point of /health is to report it, not raise
        # The detail (socket path, SQL) goes to the log, not to whoever asks /health.
        logger.warning("health: database unavailable: %s: %s", type(exc).__name__, exc)
        report["database"] = {"ok": False, "error": f"database unavailable ({type(exc).__name__})"}
        report["worker"] = {"ok": False, "error": "database unavailable"}
        report["ok"] = False
        return JsonResponse(report, status=503)

    # Only the worker's fields that say something (no nulls).
    report["worker"] = {key: value for key, value in asdict(worker_report()).items() if value is not None}
    # Circuit breakers of the outbound services this process has called (closed, open, half-open);
    # an open breaker degrades a feature, it does not make the service unhealthy.
    report["services"] = breaker_states()
    # The model gateway, named even before anything called it: URL, models, reachable or not.
    report["model_gateway"] = gateway_status()
    # Each budget with what is spent, held and when it resets; a person's without their name (no sign-in here).
    report["budgets"] = [{**state.as_dict(), "person": None} for state in budget_states()]
    report.update(health_sections())
    report["ok"] = report["database"]["ok"] and report["worker"]["ok"]
    return JsonResponse(report, status=200 if report["ok"] else 503)


def heartbeat_interval_seconds() -> int:
    """How often the heartbeat really runs: django-q2 schedules count whole minutes (hyperguild.actions)."""
    return max(1, round(settings.HYPERGUILD_WORKER_HEARTBEAT_SECONDS / 60)) * 60


@dataclass(frozen=True)
class WorkerBusy:
    """Tasks of the default queue: taken (running), ahead of the heartbeat (waiting), the oldest's start."""

    running: int
    waiting: int
    oldest_started_seconds: int


@dataclass(frozen=True)
class WorkerHealth:
    """/health's "worker". `ok` with no `busy` is a fresh heartbeat; with `busy`, an old one behind busy tasks."""

    ok: bool
    last_beat: str | None = None
    age_seconds: float | None = None
    interval_seconds: int | None = None
    stale_after_seconds: int | None = None
    busy: WorkerBusy | None = None
    note: str | None = None
    error: str | None = None


def worker_report(now: datetime | None = None) -> WorkerHealth:
    """/health's "worker": the default cluster's last heartbeat, and when it is old, whether the cluster is busy.

    A heartbeat waits in the default queue like any task: older than HYPERGUILD_WORKER_STALE_SECONDS while
    tasks of that queue are taken and none has run longer than the queue's timeout (past it django-q2 kills the
    task), the worker is busy, not stopped, and /health says so and stays 200.
    """
    now = now or timezone.now()
    limit = settings.HYPERGUILD_WORKER_STALE_SECONDS
    beat = WorkerHeartbeat.objects.filter(name=HEARTBEAT_NAME).first()
    if beat is None:
        return WorkerHealth(ok=False, error="no worker has reported yet (is the django-q2 cluster running?)")
    age = beat.age(now).total_seconds()
    report = WorkerHealth(
        ok=age <= limit,
        last_beat=beat.beat_at.isoformat(),
        age_seconds=round(age, 1),
        interval_seconds=heartbeat_interval_seconds(),
        stale_after_seconds=limit,
    )
    if age <= limit:
        return report
    queue = OrmQ.objects.filter(key=Conf.CLUSTER_NAME)  # this process's cluster: the default one
    taken = queue.filter(lock__gt=now).aggregate(n=Count("id"), first=Min("lock"))
    retry, timeout = Conf.RETRY, Conf.TIMEOUT
    # The ORM broker stamps a taken task's lock with "taken at + retry": the oldest lock is the oldest start.
    oldest = (now - (taken["first"] - timedelta(seconds=retry))).total_seconds() if taken["n"] else None
    if oldest is not None and oldest <= timeout:
        ahead = queue.filter(lock__lte=now).count()
        return replace(
            report,
            ok=True,
            busy=WorkerBusy(running=taken["n"], waiting=ahead, oldest_started_seconds=round(oldest)),
            note=(
                f"worker busy: {ahead} task{'s' if ahead != 1 else ''} ahead, the oldest started {round(oldest)} s "
                f"ago (last heartbeat {round(age)} s ago)"
            ),
        )
    return replace(report, error=f"last heartbeat {round(age)} s ago; the worker looks stopped")
