"""The supervisor's figures for GET /metrics (observability.metrics): skill runs by skill, endpoint and status."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily, Metric

from supervisor.models import SkillRun


def skill_run_metrics() -> Iterable[Metric]:
    # A gauge read from the records (not a counter kept in memory): every web process answers the same
    # figure, and the figure survives restarts. Prometheus' increase() works on it all the same.
    runs = GaugeMetricFamily(
        "hyperguild_skill_runs",
        "Skill runs recorded, by skill, endpoint and status",
        labels=["skill", "endpoint", "status"],
    )
    for row in SkillRun.objects.values("skill", "endpoint", "status").annotate(n=Count("id")).order_by():
        runs.add_metric([row["skill"], row["endpoint"], row["status"]], row["n"])
    yield runs
