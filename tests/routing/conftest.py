"""Fixtures for the routing tests: routing settings, a project, seeded histories (`gateway` is in tests/fakes)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from supervisor.actions import do_log_routing_entry
from supervisor.models import RoutingEntry
from supervisor.routing import Attempt, Decision

FAST = "fast-model"
THINKING = "thinking-model"
ROUTING_TOKEN = "routing-secret"
AUTH = {"Authorization": f"Bearer {ROUTING_TOKEN}"}


@pytest.fixture(autouse=True)
def routing_settings(settings):
    settings.HYPERGUILD_FAST_MODEL = FAST
    settings.HYPERGUILD_THINKING_MODEL = THINKING
    settings.HYPERGUILD_ROUTE_WINDOW = 50
    settings.HYPERGUILD_ROUTE_MIN_SAMPLES = 10
    settings.HYPERGUILD_ROUTE_LOCAL_FLOOR = 0.90
    settings.HYPERGUILD_ROUTE_LOCAL_CEIL = 0.70
    settings.HYPERGUILD_PASS_RATE_TTL_SECONDS = 60
    settings.ROUTING_MCP_TOKEN = ROUTING_TOKEN
    cache.clear()
    yield settings
    cache.clear()


@pytest.fixture
def project(tmp_path, settings):
    """A project root under SUPERVISOR_ALLOWED_ROOTS with one small Python file."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 2\n")
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp_path)]
    return root


def seed_history(skill: str, rate: float, samples: int = 50, model: str = FAST) -> None:
    """`samples` router-chosen first attempts of `skill`, `round(rate * samples)` of them passing."""
    passes = round(rate * samples)
    for index in range(samples):
        status = RoutingEntry.Status.PASS if index < passes else RoutingEntry.Status.FAIL
        do_log_routing_entry(
            skill=skill,
            decision=Decision(model, RoutingEntry.Reason.FLOOR, None, 0, None),
            attempt=Attempt(status),
            is_final=True,
            session_id="seed",
        )
    cache.clear()


GOOD_REVIEW = {
    "findings": [
        {
            "file": "app.py",
            "line": 2,
            "severity": "major",
            "title": "add subtracts",
            "rationale": "add returns a - b",
            "suggestion": "return a + b",
            "confidence": 0.9,
            "quote": "return a - b",
        }
    ],
    "verdict": "request_changes",
    "summary": "add is wrong",
}

INVENTED_REVIEW = {
    "findings": [
        {
            "file": "nowhere.py",
            "line": 40,
            "severity": "major",
            "title": "made up",
            "rationale": "r",
            "suggestion": "s",
            "confidence": 0.5,
        }
    ],
    "verdict": "request_changes",
    "summary": "invented",
}


def review_text(data: dict) -> str:
    return json.dumps(data)


def log(skill, model, reason, status, *, is_final=True, attempt_of=None, latency_ms=0, hours_ago=0.0):
    """One routing entry through the action, `hours_ago` in the past."""
    entry = do_log_routing_entry(
        skill=skill,
        decision=Decision(model, reason, None, 0, None),
        attempt=Attempt(status, latency_ms=latency_ms),
        is_final=is_final,
        attempt_of=attempt_of,
    )
    if hours_ago:
        RoutingEntry.objects.filter(pk=entry.pk).update(created_at=timezone.now() - timedelta(hours=hours_ago))
    return entry
