"""Prometheus metrics: `GET /metrics` in the text format, every name prefixed `hyperguild_`.

Two kinds of figures:

- **Events counted as they happen** (HTTP requests, MCP calls, BM25 refreshes): `prometheus-client`
  counters and histograms. With several web processes (`serve --web-workers N`), `serve` sets
  `PROMETHEUS_MULTIPROC_DIR` (emptied at each start) for its children, the library keeps each
  process's values in files there, and a scrape answered by any process adds them all up.
- **Figures read at scrape time** from the database (model calls, tokens and cost, the task queue,
  the embedding backlog, skill runs): sources that apps register from `AppConfig.ready()`, so the
  core names no app. Because they are read from the records, two processes can never disagree
  about them and a restart loses nothing.

    # <app>/apps.py
    register_metric_source("embeddings", embedding_metrics)   # () -> Iterable[Metric]

Who may scrape: see `scrape_refusal`.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min, Q, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django_q.models import OrmQ
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from ledger.models import ModelCall
from people.permissions import may

logger = logging.getLogger(__name__)

# Seconds; from a cached search (a few ms) to a skill run that waits on a worker (minutes).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

HTTP_REQUESTS = Counter(
    "hyperguild_http_requests",
    "HTTP requests answered, by route pattern, method and status",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "hyperguild_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern and method",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
MCP_CALLS = Counter(
    "hyperguild_mcp_calls",
    "MCP messages answered, by endpoint, method, tool (tools/call only) and outcome",
    ["endpoint", "method", "tool", "outcome"],
)
MCP_LATENCY = Histogram(
    "hyperguild_mcp_call_duration_seconds",
    "Time to answer an MCP message, by endpoint, method and tool",
    ["endpoint", "method", "tool"],
    buckets=LATENCY_BUCKETS,
)
BM25_REFRESH = Histogram(
    "hyperguild_bm25_refresh_duration_seconds",
    "Time a process spent bringing its BM25 index up to the corpus version",
    buckets=LATENCY_BUCKETS,
)

MetricSource = Callable[[], Iterable[Metric]]
_SOURCES: dict[str, MetricSource] = {}
_LOCK = threading.Lock()


def register_metric_source(name: str, source: MetricSource) -> None:
    with _LOCK:
        _SOURCES[name] = source


class _ScrapeTimeSources:
    """A collector that asks every registered source; a failing source is reported, not raised."""

    def collect(self) -> Iterable[Metric]:
        with _LOCK:
            sources = dict(_SOURCES)
        up = GaugeMetricFamily("hyperguild_metric_source_up", "1 if the source answered this scrape", labels=["source"])
        for name, source in sources.items():
            try:
                families = list(source())
            except Exception as exc:  # noqa: BLE001 — a scrape reports problems, it never fails
                logger.warning("metric source %s failed: %s", name, exc)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            yield from families
        yield up


# The children of the per-request metrics by label values: `labels()` validates its arguments and takes the
# metric's lock each time, a third of what counting a request cost (bench/RESULTS.md, "What metrics and traces
# cost"). As many entries as the metrics have children anyway; a lost race only asks `labels()` twice.
_HTTP: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
_MCP: dict[tuple[str, str, str, str], tuple[Counter, Histogram]] = {}


# The HTTP methods a route can mean; any other (a client may send any token) is counted as "other", so a
# caller cannot add series: 10,000 made-up methods grew /metrics to 20 MB (issue 46, finding 8).
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_http(route: str, method: str, status: int, seconds: float) -> None:
    # Only MetricsMiddleware calls it, and only with HYPERGUILD_METRICS on.
    method = method if method in HTTP_METHODS else "other"
    children = _HTTP.get((route, method, status))
    if children is None:
        children = _HTTP[route, method, status] = (
            HTTP_REQUESTS.labels(route, method, str(status)),
            HTTP_LATENCY.labels(route, method),
        )
    children[0].inc()
    children[1].observe(seconds)


def observe_mcp(endpoint: str, method: str, tool: str | None, outcome: str, seconds: float) -> None:
    if not settings.HYPERGUILD_METRICS:
        return
    key = (endpoint, method or "unknown", tool or "", outcome)
    children = _MCP.get(key)
    if children is None:
        children = _MCP[key] = (MCP_CALLS.labels(*key), MCP_LATENCY.labels(*key[:3]))
    children[0].inc()
    children[1].observe(seconds)


def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def exposition() -> bytes:
    """The text every scrape gets: this process's (or all processes') events plus the scrape-time sources."""
    if multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_ProcessLocal())
    registry.register(_ScrapeTimeSources())
    return generate_latest(registry)


class _ProcessLocal:
    """This process's counters and histograms (the default registry), when there is one process."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def scrape_refusal(request: HttpRequest) -> tuple[int, str] | None:
    """None if this caller may read /metrics, else (status, reason).

    An operator or staff member signed in may always read it. Otherwise, with HYPERGUILD_METRICS_TOKEN
    set, a scrape must carry it as a Bearer token (Prometheus: `authorization: {credentials: …}`).
    Without it, only loopback callers may scrape: the figures name people's tools and models, so they
    are not for the whole network.
    """
    user = getattr(request, "user", None)
    if getattr(user, "is_authenticated", False) and may(user, "service:metrics"):
        return None  # an operator or staff member signed in (docs/people.md): the browser door
    token = settings.HYPERGUILD_METRICS_TOKEN
    if token:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        given = header[7:] if header[:7].lower() == "bearer " else ""
        if given and hmac.compare_digest(given.encode(), token.encode()):
            return None
        return 401, "GET /metrics needs Authorization: Bearer <HYPERGUILD_METRICS_TOKEN>"
    if _loopback(request.META.get("REMOTE_ADDR", "")):
        return None
    return 403, "GET /metrics answers loopback callers only; set HYPERGUILD_METRICS_TOKEN to scrape from elsewhere"


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not settings.HYPERGUILD_METRICS:
        raise Http404("metrics are off (HYPERGUILD_METRICS=0)")
    refusal = scrape_refusal(request)
    if refusal is not None:
        status, reason = refusal
        response = HttpResponse(reason + "\n", status=status, content_type="text/plain; charset=utf-8")
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse("GET only\n", status=405, content_type="text/plain; charset=utf-8")
        response["Allow"] = "GET, HEAD"
        return response
    # The classic text format (0.0.4): every Prometheus reads it, Debian's 2.42 included.
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)


class MetricsMiddleware:
    """Counts every request by its URL pattern (never the raw path: slugs and ids would explode the labels).

    With HYPERGUILD_METRICS off it stays in the chain and passes each request on, rather than leave it
    (MiddlewareNotUsed): on CPython 3.11 two frames more or less under every view moved a hot loop of
    brain_query's across a boundary of the interpreter's frame stack, where each call maps and unmaps a
    chunk of memory, and that cost 0.25-0.6 ms a call, ten times what counting costs (bench/RESULTS.md,
    "What metrics and traces cost"). Metrics on or off, the stack is now the same.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.counting = settings.HYPERGUILD_METRICS

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not self.counting:
            return self.get_response(request)
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else "unmatched"
        observe_http(route, request.method or "", response.status_code, time.perf_counter() - started)
        return response


def queue_metrics() -> Iterable[Metric]:
    """The django-q2 ORM broker's queue: tasks waiting and the age of the oldest (0 when empty)."""
    now = timezone.now()
    waiting = OrmQ.objects.filter(lock__lte=now).aggregate(n=Count("id"), oldest=Min("lock"))
    taken = OrmQ.objects.filter(lock__gt=now).count()
    depth = GaugeMetricFamily("hyperguild_queue_tasks", "Tasks in the django-q2 queue", labels=["state"])
    depth.add_metric(["waiting"], waiting["n"])
    depth.add_metric(["taken"], taken)
    yield depth
    oldest = waiting["oldest"]
    age = (now - oldest) / timedelta(seconds=1) if oldest is not None else 0.0
    yield GaugeMetricFamily(
        "hyperguild_queue_oldest_task_age_seconds", "Age of the oldest task still waiting for a worker", value=age
    )


def model_call_metrics() -> Iterable[Metric]:
    """Model calls, tokens and cost by model, skill and outcome, read from the ModelCall records.

    A cost total here is exactly the sum of the records' costs (calls whose cost is unknown add
    nothing and are counted apart in hyperguild_model_calls_unpriced).
    """
    calls = GaugeMetricFamily("hyperguild_model_calls", "Model calls recorded", labels=["model", "skill", "outcome"])
    tokens = GaugeMetricFamily(
        "hyperguild_model_tokens", "Tokens of the model calls recorded", labels=["model", "skill", "direction"]
    )
    cost = GaugeMetricFamily(
        "hyperguild_model_cost_usd", "Cost in USD of the model calls recorded", labels=["model", "skill"]
    )
    unpriced = GaugeMetricFamily(
        "hyperguild_model_calls_unpriced",
        "Model calls whose cost is unknown (usage or price)",
        labels=["model", "skill"],
    )
    rows = (
        ModelCall.objects.values("model", "skill", "outcome")
        .annotate(
            n=Count("id"),
            i=Sum("input_tokens"),
            o=Sum("output_tokens"),
            usd=Sum("cost_usd"),
            unknown=Count("id", filter=Q(cost_usd__isnull=True)),
        )
        .order_by()
    )
    by_model: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        calls.add_metric([row["model"], row["skill"], row["outcome"]], row["n"])
        totals = by_model.setdefault((row["model"], row["skill"]), [0, 0, 0.0, 0])
        totals[0] += row["i"] or 0
        totals[1] += row["o"] or 0
        totals[2] += float(row["usd"] or 0)
        totals[3] += row["unknown"]
    for (model, skill), (inputs, outputs, usd, unknown) in by_model.items():
        tokens.add_metric([model, skill, "input"], inputs)
        tokens.add_metric([model, skill, "output"], outputs)
        cost.add_metric([model, skill], usd)
        unpriced.add_metric([model, skill], unknown)
    yield from (calls, tokens, cost, unpriced)


register_metric_source("queue", queue_metrics)
register_metric_source("model_calls", model_call_metrics)
