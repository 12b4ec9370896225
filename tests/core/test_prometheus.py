"""A real Prometheus (Debian's package) scrapes a server running two web processes.

The server is granian with two worker processes on one socket, as `serve --web-workers 2` runs
it, with PROMETHEUS_MULTIPROC_DIR set as `serve` sets it. Prometheus scrapes /metrics every
second; the test asks Prometheus, through its HTTP API, how many MCP calls it saw.

One server and one Prometheus for the module: Prometheus's first scrape waits on its target discovery, once.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.conftest import call_tool, free_port
from tests.fakes.helpers import granian_on_test_database, wait_for

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
CALLS = 12
pytestmark = pytest.mark.django_db(transaction=True)


def prometheus_value(prom: str, query: str) -> float | None:
    answer = httpx.get(f"{prom}/api/v1/query", params={"query": query}, timeout=5).json()
    assert answer["status"] == "success", answer
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def last_scrape(prom: str) -> float:
    """When Prometheus last scraped the server (the timestamp of its `up` sample)."""
    scraped_at = prometheus_value(prom, "timestamp(up)")
    assert scraped_at is not None
    return scraped_at


def next_scrape(prom: str, after: float) -> float:
    """Wait for a scrape later than `after`; its time."""

    def later() -> float:
        scraped_at = last_scrape(prom)
        return scraped_at if scraped_at > after else 0.0

    return wait_for(later, 30, "a later scrape")


@pytest.fixture(scope="module")
def two_web_processes(django_db_setup):
    # The web processes read the test database (emptied after each test) and keep their counters in one folder
    # for the module: only the first test makes MCP calls, so the count it asserts is of its own calls.
    scratch = Path(tempfile.mkdtemp(prefix="prometheus-", dir=settings.DATA_DIR))
    metrics_dir = scratch / "metrics"
    metrics_dir.mkdir()
    try:
        with granian_on_test_database(scratch / "data", workers=2, PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)) as (
            base,
            port,
        ):
            yield base, port, metrics_dir, scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def prometheus(two_web_processes):
    base, port, _, scratch = two_web_processes
    prom_port = free_port()
    config = scratch / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: hyperguild\n    metrics_path: /metrics\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
    )
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={scratch / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    prom = f"http://127.0.0.1:{prom_port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{prom}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(ready, 60, "Prometheus")
        yield prom
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def test_prometheus_counts_exactly_the_mcp_calls_made_across_two_web_processes(two_web_processes, prometheus):
    from brain.actions import do_ingest_note

    base, _, metrics_dir, _ = two_web_processes
    do_ingest_note(title="Vacuum", body="Vacuum reclaims dead tuples.", wing="concepts", hall="db")
    query = 'sum(hyperguild_mcp_calls_total{endpoint="brain",method="tools/call",tool="brain_query",outcome="ok"})'
    wait_for(lambda: prometheus_value(prometheus, "up") == 1.0, 30, "a first successful scrape")

    for request_id in range(CALLS):
        # A new connection each time: the kernel spreads them over both processes' accept queues.
        assert (
            call_tool(f"{base}/mcp/brain", "brain_query", {"query": "vacuum"}, request_id=request_id)["isError"]
            is False
        )

    seen = wait_for(lambda: prometheus_value(prometheus, query) == CALLS, 30, f"Prometheus to see {CALLS} calls")
    assert seen
    # Two more scrapes (waited for, not slept for): the figure stays put (nothing counted twice).
    scraped_at = last_scrape(prometheus)
    for _ in range(2):
        scraped_at = next_scrape(prometheus, after=scraped_at)
    assert prometheus_value(prometheus, query) == CALLS
    # Both processes kept their own counters, and the scrape added them up.
    pids = {path.name.rsplit("_", 1)[-1] for path in metrics_dir.glob("counter_*.db")}
    assert len(pids) == 2, sorted(path.name for path in metrics_dir.iterdir())
    assert prometheus_value(prometheus, 'sum(hyperguild_http_requests_total{route="mcp/<slug:endpoint>"})') >= CALLS
    assert prometheus_value(prometheus, 'hyperguild_metric_source_up{source="queue"}') == 1.0


def test_prometheus_reads_the_same_model_cost_total_as_the_records(two_web_processes, prometheus):
    from decimal import Decimal

    from django.db import transaction
    from django.db.models import Sum
    from model_bakery import baker

    from ledger.models import ModelCall

    # In one transaction: Prometheus already scrapes every second, and a scrape between two of these rows would
    # read part of the total.
    with transaction.atomic():
        for cost, model in (("0.0123", "fast"), ("0.2500", "thinking"), ("0.0007", "fast")):
            baker.make(ModelCall, model=model, skill="review", provider="openai", outcome="ok", cost_usd=Decimal(cost))
    expected = float(ModelCall.objects.aggregate(total=Sum("cost_usd"))["total"])
    seen = wait_for(lambda: prometheus_value(prometheus, "sum(hyperguild_model_cost_usd)"), 30, "a scrape with costs")
    assert seen == pytest.approx(expected)
