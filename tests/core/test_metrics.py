"""GET /metrics: the Prometheus text format, who may read it, and what it counts."""

from __future__ import annotations

import httpx
import pytest
from model_bakery import baker
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import call_tool

TOKEN = "brain-metrics-test"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of an exposition."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def mcp_calls(text: str, tool: str, outcome: str = "ok") -> float:
    key = (
        "hyperguild_mcp_calls_total",
        (("endpoint", "brain"), ("method", "tools/call"), ("outcome", outcome), ("tool", tool)),
    )
    return samples(text).get(key, 0.0)


@pytest.fixture
def brain(asgi_server, settings, transactional_db):
    from brain import bm25

    settings.BRAIN_MCP_TOKEN = TOKEN
    settings.BRAIN_EMBEDDER = "off"
    bm25.reset()
    yield asgi_server
    bm25.reset()


def test_metrics_count_each_mcp_call_by_endpoint_tool_and_outcome(brain):
    from brain.actions import do_ingest_note

    do_ingest_note(title="Vacuum", body="Vacuum reclaims dead tuples.", wing="concepts", hall="db")
    before = httpx.get(f"{brain}/metrics").text
    for _ in range(3):
        call_tool(f"{brain}/mcp/brain", "brain_query", {"query": "vacuum"}, headers=AUTH)
    refused = call_tool(f"{brain}/mcp/brain", "brain_query", {"query": ""}, headers=AUTH)
    assert refused["isError"] is True
    after = httpx.get(f"{brain}/metrics")

    assert after.status_code == 200
    assert after.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert mcp_calls(after.text, "brain_query") - mcp_calls(before, "brain_query") == 3
    assert (
        mcp_calls(after.text, "brain_query", "invalid_arguments")
        - mcp_calls(before, "brain_query", "invalid_arguments")
        == 1
    )
    found = samples(after.text)
    latency = (
        "hyperguild_mcp_call_duration_seconds_count",
        (("endpoint", "brain"), ("method", "tools/call"), ("tool", "brain_query")),
    )
    assert found[latency] >= 4


def test_metrics_name_a_route_pattern_never_a_raw_path(brain):
    httpx.get(f"{brain}/notes/no-such-slug-abc", headers=AUTH)
    text = httpx.get(f"{brain}/metrics").text
    assert "no-such-slug-abc" not in text
    routes = {dict(labels).get("route") for (name, labels) in samples(text) if name == "hyperguild_http_requests_total"}
    assert "notes/<path:slug>" in routes, routes


def test_a_made_up_tool_or_method_adds_no_series(brain):
    call_tool(f"{brain}/mcp/brain", "brain_query", {"query": "x"}, headers=AUTH)
    httpx.post(
        f"{brain}/mcp/brain",
        headers={**AUTH, "Content-Type": "application/json"},
        json={"jsonrpc": "2.0", "id": 1, "method": "made/up-method-xyz"},
    )
    httpx.post(
        f"{brain}/mcp/brain",
        headers={**AUTH, "Content-Type": "application/json"},
        json={
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "no_such_tool_xyz", "arguments": {}},
        },
    )
    text = httpx.get(f"{brain}/metrics").text
    assert "made/up-method-xyz" not in text and "no_such_tool_xyz" not in text
    assert 'method="other"' in text


def test_metrics_report_the_queue_the_embedding_backlog_and_skill_runs(brain, settings):
    from django_q.tasks import async_task

    from supervisor.models import SkillRun

    settings.BRAIN_EMBEDDER = "local"
    from brain.actions import do_ingest_note

    do_ingest_note(title="Queued", body="a note whose chunks wait for vectors", wing="concepts", hall="db")
    async_task("hyperguild.tasks.heartbeat")
    baker.make(SkillRun, skill="tdd_red", tool="tdd_red", endpoint="supervisor", status="pass")
    found = samples(httpx.get(f"{brain}/metrics").text)

    assert found[("hyperguild_queue_tasks", (("state", "waiting"),))] >= 1
    assert found[("hyperguild_queue_oldest_task_age_seconds", ())] >= 0
    backlog = [v for (name, labels), v in found.items() if name == "hyperguild_embedding_backlog_notes"]
    assert backlog and backlog[0] >= 1
    runs = ("hyperguild_skill_runs", (("endpoint", "supervisor"), ("skill", "tdd_red"), ("status", "pass")))
    assert found[runs] == 1
    assert all(v == 1 for (name, _), v in found.items() if name == "hyperguild_metric_source_up")


def test_metrics_refuse_a_caller_beyond_loopback(client, db):
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 403
    assert b"loopback" in response.content
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200


def test_with_a_metrics_token_set_a_scrape_must_carry_it(client, db, settings):
    settings.HYPERGUILD_METRICS_TOKEN = "scrape-secret"
    missing = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    wrong = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 401
    right = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer scrape-secret")
    assert right.status_code == 200
    assert b"hyperguild_http_requests_total" in right.content


def test_with_metrics_off_there_is_no_metrics_page(client, db, settings):
    settings.HYPERGUILD_METRICS = False
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404


def test_with_metrics_off_requests_pass_through_the_middleware_uncounted(db, settings):
    from django.test import Client
    from prometheus_client import REGISTRY

    def counted() -> float:
        labels = {"route": "health/live", "method": "GET", "status": "200"}
        return REGISTRY.get_sample_value("hyperguild_http_requests_total", labels) or 0.0

    settings.HYPERGUILD_METRICS = False
    off = Client()  # its middleware chain is built at its first request, with metrics off
    before = counted()
    assert [off.get("/health/live").status_code for _ in range(2)] == [200, 200]
    assert counted() == before

    settings.HYPERGUILD_METRICS = True
    assert Client().get("/health/live").status_code == 200
    assert counted() == before + 1


def test_the_cost_on_metrics_is_the_sum_of_the_model_call_records(brain):
    from decimal import Decimal

    from ledger.models import ModelCall

    for cost in ("0.0123", "0.0400", None):
        baker.make(
            ModelCall,
            model="fast",
            skill="review",
            provider="openai",
            outcome="ok",
            input_tokens=10,
            output_tokens=5,
            cost_usd=Decimal(cost) if cost else None,
        )
    found = samples(httpx.get(f"{brain}/metrics").text)
    assert found[("hyperguild_model_cost_usd", (("model", "fast"), ("skill", "review")))] == pytest.approx(0.0523)
    assert found[("hyperguild_model_calls", (("model", "fast"), ("outcome", "ok"), ("skill", "review")))] == 3
    assert found[("hyperguild_model_tokens", (("direction", "input"), ("model", "fast"), ("skill", "review")))] == 30
    assert found[("hyperguild_model_calls_unpriced", (("model", "fast"), ("skill", "review")))] == 1


def test_an_operator_signed_in_reads_metrics_from_anywhere_and_a_reader_does_not(client, db, settings):
    from tests.people.conftest import make_person

    settings.HYPERGUILD_METRICS_TOKEN = "scrape-secret"
    otto = make_person("otto", "operator")
    rita = make_person("rita", "reader")
    client.force_login(rita)
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 401
    client.force_login(otto)
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 200


UNUSUAL_METHODS = (
    "PROPFIND",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
    "SEARCH",
    "PURGE",
    "REPORT",
    "NOTIFY",
    "SUBSCRIBE",
    "LINK",
    "UNLINK",
    "MKCALENDAR",
)


def test_a_made_up_http_method_counts_as_other_and_adds_no_series(brain):
    # Issue 46, finding 8: 10,000 random methods to /health/live grew /metrics (open to loopback) to 20 MB.
    # (The test server's HTTP parser takes only the methods it knows; a server such as granian takes any token.)
    for method in UNUSUAL_METHODS:
        httpx.request(method, f"{brain}/health/live")
    text = httpx.get(f"{brain}/metrics").text
    assert not [method for method in UNUSUAL_METHODS if f'"{method}"' in text]
    methods = {
        dict(labels).get("method") for (name, labels) in samples(text) if name == "hyperguild_http_requests_total"
    }
    assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"} and "other" in methods
    other = [
        value
        for (name, labels), value in samples(text).items()
        if name == "hyperguild_http_requests_total" and dict(labels)["method"] == "other"
    ]
    assert sum(other) >= len(UNUSUAL_METHODS)
