from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from hyperguild.actions import do_record_worker_heartbeat
from hyperguild.models import WorkerHeartbeat
from hyperguild.tasks import heartbeat

pytestmark = pytest.mark.django_db


def test_health_without_any_worker_heartbeat_is_unhealthy(client):
    response = client.get("/health")
    assert response.status_code == 503
    body = response.json()
    assert body["database"]["ok"] is True and body["database"]["vector"].startswith("0.8")
    assert body["worker"]["ok"] is False
    assert "django-q2" in body["worker"]["error"]
    assert body["version"]


def test_health_with_a_fresh_heartbeat_is_healthy(client):
    heartbeat()
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["ok"] is True
    assert response.json()["worker"]["age_seconds"] < 5


def test_health_reports_a_stopped_worker_as_not_healthy(client, settings):
    do_record_worker_heartbeat()
    stale = timezone.now() - timedelta(seconds=settings.HYPERGUILD_WORKER_STALE_SECONDS + 30)
    WorkerHeartbeat.objects.update(beat_at=stale)
    response = client.get("/health")
    assert response.status_code == 503
    assert response.json()["worker"]["ok"] is False
    assert "looks stopped" in response.json()["worker"]["error"]


def test_health_only_answers_get(client):
    assert client.post("/health").status_code == 405


def _stale_heartbeat(settings) -> None:
    do_record_worker_heartbeat()
    WorkerHeartbeat.objects.update(
        beat_at=timezone.now() - timedelta(seconds=settings.HYPERGUILD_WORKER_STALE_SECONDS + 30)
    )


def test_a_busy_worker_is_reported_busy_with_the_tasks_ahead_not_stopped(client, settings):
    """Issue 47: /health said "the worker looks stopped" while the worker was alive and busy."""
    from django_q.conf import Conf
    from django_q.models import OrmQ

    _stale_heartbeat(settings)
    now = timezone.now()
    OrmQ.objects.create(
        key=Conf.CLUSTER_NAME, payload="taken", lock=now - timedelta(seconds=40) + timedelta(seconds=Conf.RETRY)
    )
    for _ in range(2):
        OrmQ.objects.create(key=Conf.CLUSTER_NAME, payload="waiting", lock=now - timedelta(seconds=5))
    OrmQ.objects.create(key="embed", payload="another queue's", lock=now)  # not this worker's
    response = client.get("/health")
    assert response.status_code == 200, response.json()
    worker = response.json()["worker"]
    assert worker["ok"] is True and "error" not in worker
    assert worker["note"].startswith("worker busy: 2 tasks ahead, the oldest started 4") and "s ago" in worker["note"]


def test_a_task_taken_longer_ago_than_the_timeout_does_not_count_as_busy(client, settings):
    from django_q.conf import Conf
    from django_q.models import OrmQ

    _stale_heartbeat(settings)
    taken = timezone.now() - timedelta(seconds=Conf.TIMEOUT + 60)
    OrmQ.objects.create(key=Conf.CLUSTER_NAME, payload="taken", lock=taken + timedelta(seconds=Conf.RETRY))
    response = client.get("/health")
    assert response.status_code == 503
    assert "looks stopped" in response.json()["worker"]["error"]


def test_health_shows_each_budget_with_spent_held_and_reset(client, settings):
    heartbeat()
    settings.HYPERGUILD_BUDGET_DAILY_USD = 0.002
    [budget] = client.get("/health").json()["budgets"]
    assert budget == {
        **budget,
        "scope": "service",
        "period": "day",
        "limit_usd": "0.002",
        "spent_usd": "0.00",
        "held_usd": "0.00",
        "person": None,
    }
    assert "resets_at" in budget
