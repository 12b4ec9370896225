"""Traces: one brain_query call reaches an OTLP/HTTP collector as a tree under the caller's traceparent.

The server is granian (one process, as `serve` starts it) with OTEL_EXPORTER_OTLP_ENDPOINT
pointing at a fake collector on 127.0.0.1 that decodes the protobuf it receives.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.http import HttpResponse
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled, suppress_instrumentation

from observability.tracing import in_unsampled_trace, mcp_span, span
from tests.conftest import call_tool, rpc
from tests.fakes.helpers import granian_on_test_database, wait_for
from tests.fakes.otlp import FakeCollector

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def traced_server(django_db_setup):
    # One server for the module's tests that share it: each reads only the spans of a trace id of its own, and
    # what it writes through the ORM is in the test database, emptied after each test.
    scratch = Path(tempfile.mkdtemp(prefix="tracing-", dir=settings.DATA_DIR))
    try:
        with (
            FakeCollector() as collector,
            granian_on_test_database(
                scratch, OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_BSP_SCHEDULE_DELAY="100"
            ) as (base, _),
        ):
            yield base, collector
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def ancestors(span, by_id: dict) -> list[str]:
    chain = []
    while span.parent_span_id and span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
        chain.append(span.name)
    return chain


def test_a_brain_query_is_one_trace_under_the_callers_traceparent(traced_server, transactional_db):
    from brain.actions import do_ingest_note

    base, collector = traced_server
    do_ingest_note(title="Vacuum", body="Vacuum reclaims dead tuples.", wing="concepts", hall="db")
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    headers = {"traceparent": f"00-{trace_id}-{caller_span}-01"}
    result = call_tool(f"{base}/mcp/brain", "brain_query", {"query": "vacuum"}, headers=headers)
    assert result["isError"] is False

    def complete():
        spans = collector.spans(trace_id)
        names = {s.name for s in spans}
        return spans if "mcp tools/call brain_query" in names and "brain.search" in names else None

    spans = wait_for(complete, 30, "the trace of the brain_query call")
    by_id = {s.span_id: s for s in spans}
    mcp = next(s for s in spans if s.name == "mcp tools/call brain_query")
    assert mcp.attributes["mcp.endpoint"] == "brain"
    assert mcp.attributes["mcp.tool.name"] == "brain_query"
    assert mcp.attributes["mcp.protocol.version"]
    # The HTTP server span continues the caller's span; the MCP span is under it.
    roots = [s for s in spans if s.parent_span_id == caller_span]
    assert roots, [(s.name, s.parent_span_id) for s in spans]
    search = next(s for s in spans if s.name == "brain.search")
    assert "mcp tools/call brain_query" in ancestors(search, by_id)
    database = [
        s
        for s in spans
        if s.attributes.get("db.system") == "postgresql" or s.attributes.get("db.system.name") == "postgresql"
    ]
    assert any("brain.search" in ancestors(s, by_id) for s in database), [s.name for s in database]
    assert all(s.trace_id == trace_id for s in spans)


def test_a_traceparent_in_the_requests_meta_continues_the_callers_trace(traced_server, transactional_db):
    base, collector = traced_server
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    message = rpc("tools/list", {"_meta": {"traceparent": f"00-{trace_id}-{caller_span}-01"}})
    response = httpx.post(
        f"{base}/mcp/brain", json=message, headers={"Accept": "application/json, text/event-stream"}, timeout=30
    )
    assert response.status_code == 200

    def received():
        return [s for s in collector.spans(trace_id) if s.name == "mcp tools/list"]

    (span,) = wait_for(received, 30, "the tools/list span")
    assert span.parent_span_id == caller_span


def test_sampled_at_zero_only_a_callers_sampled_trace_is_exported(transactional_db):
    scratch = Path(tempfile.mkdtemp(prefix="tracing-", dir=settings.DATA_DIR))
    try:
        with (
            FakeCollector() as collector,
            granian_on_test_database(
                scratch,
                OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
                OTEL_BSP_SCHEDULE_DELAY="100",
                HYPERGUILD_TRACE_SAMPLE="0",
            ) as (base, _),
        ):
            for _ in range(3):  # no traceparent: a new trace, which a sample of 0 never records
                assert call_tool(f"{base}/mcp/brain", "brain_query", {"query": "vacuum"})["isError"] is False
            trace_id = secrets.token_hex(16)
            headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}  # the caller sampled it
            assert (
                call_tool(f"{base}/mcp/brain", "brain_query", {"query": "vacuum"}, headers=headers)["isError"] is False
            )

            wait_for(
                lambda: any(s.name == "mcp tools/call brain_query" for s in collector.spans(trace_id)),
                30,
                "the caller's sampled trace",
            )
            # Spans leave in the order they end, so the three earlier calls' would have come first.
            assert {s.trace_id for s in collector.spans()} == {trace_id}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _inside(sampled: bool):
    flags = trace.TraceFlags(trace.TraceFlags.SAMPLED if sampled else trace.TraceFlags.DEFAULT)
    context = trace.SpanContext(
        int(secrets.token_hex(16), 16), int(secrets.token_hex(8), 16), is_remote=True, trace_flags=flags
    )
    return trace.use_span(trace.NonRecordingSpan(context))


def test_a_request_left_unsampled_makes_no_span_of_its_own_but_a_callers_sampled_meta_is_continued():
    message = rpc("tools/call", {"name": "brain_query", "arguments": {"query": "x"}})
    with suppress_instrumentation():  # how RequestSpans runs a request it did not sample: no span, no context
        assert in_unsampled_trace()
        with mcp_span("brain", message, person_id=1, revision="2025-03-26") as current:
            assert current is trace.INVALID_SPAN
            with span("brain.search") as inner:
                assert inner is trace.INVALID_SPAN
        meta = rpc(
            "tools/call",
            {
                "name": "brain_query",
                "arguments": {},
                "_meta": {"traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"},
            },
        )
        with mcp_span("brain", meta, person_id=1, revision="2025-03-26"):
            assert not in_unsampled_trace()


def test_in_a_trace_the_sampler_dropped_no_span_is_made_and_the_instrumentations_stand_down():
    message = rpc("tools/call", {"name": "brain_query", "arguments": {"query": "x"}})
    with _inside(sampled=False) as dropped:
        assert in_unsampled_trace()
        with mcp_span("brain", message, person_id=1, revision="2025-03-26") as current:
            assert current is dropped and not is_instrumentation_enabled()  # no SQL or HTTP spans either
            with span("brain.search") as inner:
                assert inner is dropped
    # A sampled caller (here in `_meta`) is continued in full, even under a dropped request span.
    meta = rpc(
        "tools/call",
        {
            "name": "brain_query",
            "arguments": {},
            "_meta": {"traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"},
        },
    )
    with _inside(sampled=False), mcp_span("brain", meta, person_id=1, revision="2025-03-26"):
        assert not in_unsampled_trace() and is_instrumentation_enabled()
    with _inside(sampled=True):
        assert not in_unsampled_trace()
    assert not in_unsampled_trace()  # outside any trace: a span there would start one


def test_a_request_without_traceparent_is_kept_at_the_sample_rate_and_run_unsampled_otherwise(monkeypatch, rf):
    import observability.tracing as tracing

    seen = []

    def view(request):
        seen.append((in_unsampled_trace(), is_instrumentation_enabled()))
        return HttpResponse("ok")

    monkeypatch.setattr(tracing, "_configured", True)
    monkeypatch.setattr(tracing, "_traceparent_only", True)
    for rate in (0.0, 1.0):
        monkeypatch.setattr(tracing, "_sample_rate", rate)
        assert tracing.RequestSpans(view)(rf.post("/mcp/brain")).status_code == 200
    assert seen == [(True, False), (False, True)]  # dropped: no spans, no SQL/HTTP spans; kept: traced
