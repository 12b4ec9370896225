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
