"""OpenTelemetry traces, exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set.

`configure_tracing()` runs once per process from `ObservabilityConfig.ready()`. With no endpoint it
does nothing: every `span()` below is then the API's no-op span, which costs a function call.
With one, it installs the SDK's tracer provider (batching exporter, so a request never waits on
the collector) and the stock instrumentations of psycopg (a span per query) and httpx (a span per
outbound call: models, embedders, rerankers); `RequestSpans`, first in MIDDLEWARE, makes each sampled
request's server span (continuing the caller's `traceparent` header) after deciding whether to sample.

The MCP view adds a span per MCP message (`mcp_span`): endpoint, method, tool, the person's id and
the protocol revision; a `traceparent` in the request's `params._meta` continues the caller's
trace when the HTTP header does not carry one. Apps add their own child spans with `span()`.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled, suppress_instrumentation

from hyperguild.lib.typed import JSON

logger = logging.getLogger(__name__)
TRACER_NAME = "hyperguild"
F = TypeVar("F", bound=Callable[..., Any])

_configured = False
# The share of new traces RequestSpans starts (None: the SDK's own sampler, OTEL_TRACES_SAMPLER, decides).
_sample_rate: float | None = None
# Whether a caller's trace can only come in a `traceparent` header (OTEL_PROPAGATORS unset: the SDK's default ones).
_traceparent_only = False
_lock = threading.Lock()


def tracing_enabled() -> bool:
    return bool(settings.OTEL_EXPORTER_OTLP_ENDPOINT)


def configure_tracing() -> bool:
    """Install the tracer provider and the instrumentations if a collector is configured. True if on."""
    global _configured
    if not tracing_enabled():
        return False
    with _lock:
        if _configured:
            return True
        # Imported here: with tracing off, the SDK, the exporter and the instrumentations are never loaded.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased

        endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT.rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"  # OTLP/HTTP's path for traces under the collector's base URL
        # A caller's sampled trace is always continued; of the requests that start a trace, RequestSpans keeps
        # HYPERGUILD_TRACE_SAMPLE before any span is made (so the SDK records every root it is asked for). With
        # OTEL_TRACES_SAMPLER set, the SDK reads it (and its argument) itself and RequestSpans asks it every time.
        global _sample_rate, _traceparent_only
        sdk_sampler = bool(os.environ.get("OTEL_TRACES_SAMPLER"))
        _traceparent_only = not os.environ.get("OTEL_PROPAGATORS")  # the SDK's default: W3C trace context, baggage
        _sample_rate = None if sdk_sampler else settings.HYPERGUILD_TRACE_SAMPLE
        sampler = None if sdk_sampler else ParentBased(_requests_kept_others_by_ratio(settings.HYPERGUILD_TRACE_SAMPLE))
        provider = TracerProvider(
            resource=Resource.create({"service.name": settings.OTEL_SERVICE_NAME, "service.version": settings.VERSION}),
            sampler=sampler,
        )
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        trace.set_tracer_provider(provider)
        if settings.HYPERGUILD_TRACE_DATABASE:
            PsycopgInstrumentor().instrument(tracer_provider=provider, enable_commenter=False)
        HTTPXClientInstrumentor().instrument(tracer_provider=provider)
        _configured = True
        logger.info(
            "tracing on: spans go to %s (%s)",
            endpoint,
            os.environ.get("OTEL_TRACES_SAMPLER") or f"sampled: {settings.HYPERGUILD_TRACE_SAMPLE:g} of new traces",
        )
        return True


def _requests_kept_others_by_ratio(rate: float) -> Any:
    """The root sampler: a request's SERVER span was kept by RequestSpans already; any other root (a pool check,
    a background refresh, a worker's outbound call) is kept at `rate`, by its trace id."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Sampler, TraceIdRatioBased  # with the SDK, above

    by_ratio = TraceIdRatioBased(rate)

    class RequestsKeptOthersByRatio(Sampler):
        def should_sample(
            self,
            parent_context: Any,
            trace_id: int,
            name: str,
            kind: Any = None,
            attributes: Any = None,
            links: Any = None,
            trace_state: Any = None,
        ) -> Any:
            chosen = ALWAYS_ON if kind == trace.SpanKind.SERVER else by_ratio
            return chosen.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

        def get_description(self) -> str:
            return f"RequestsKeptOthersByRatio{{{rate}}}"

    return RequestsKeptOthersByRatio()


def flush_traces(timeout_millis: int = 5000) -> None:
    """Send what is batched now (bench/tracing_cpu_probe.py counts the exporter's work in a call's cost)."""
    provider = trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush(timeout_millis)


# One tracer for the process: `trace.get_tracer` builds a new one per call (about a millisecond of the SDK's
# bookkeeping under a profiler, bench/tracing_cpu.py). Before configure_tracing() it is the API's proxy, which
# turns into the SDK's tracer once a provider is installed.
_TRACER = trace.get_tracer(TRACER_NAME)


def tracer() -> trace.Tracer:
    return _TRACER


def carry_context(function: Callable[[], None]) -> Callable[[], None]:
    """`function`, run in another thread, under the trace context current where it was wrapped."""
    parent = otel_context.get_current()

    def run() -> None:
        token = otel_context.attach(parent)
        try:
            function()
        finally:
            otel_context.detach(token)

    return run


def in_unsampled_trace() -> bool:
    """Whether the current work belongs to a trace the sampler dropped: its spans would be recorded nowhere, so
    none are made (most requests, with HYPERGUILD_TRACE_SAMPLE below 1). That is a caller's unsampled trace, or
    a request RequestSpans did not sample: it has no span and runs with the instrumentations suppressed. Other
    work outside any trace (a pool check, a worker's outbound call) is not: a span there starts a trace of its own.
    """
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        return not context.trace_flags.sampled
    # Without this, each dropped request's MCP and search spans started traces of their own, kept at the SDK's
    # ratio: a tenth of the dropped requests traced after all (bench/RESULTS.md, "What metrics and traces cost").
    return not is_instrumentation_enabled()


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[trace.Span]:
    """A child span of whatever is current (a no-op when tracing is off or the trace is not sampled)."""
    if in_unsampled_trace():
        yield trace.get_current_span()
        return
    with tracer().start_as_current_span(name, attributes={k: v for k, v in attributes.items() if v is not None}) as s:
        yield s


def traced(name: str) -> Callable[[F], F]:
    """A decorator: each call of the function is a child span called `name` (none in an unsampled trace)."""

    def wrap(function: F) -> F:
        @functools.wraps(function)
        def inner(*args: Any, **kwargs: Any) -> Any:
            if in_unsampled_trace():
                return function(*args, **kwargs)
            with tracer().start_as_current_span(name):
                return function(*args, **kwargs)

        return inner  # type: ignore[return-value]  # same signature: functools.wraps

    return wrap


class RequestSpans:
    """The server span of each HTTP request, when tracing is on (first in MIDDLEWARE).

    In place of the stock Django instrumentation, which collects a request's attributes and makes its span before
    any sampling decision: on this service's small calls that alone cost about a tenth of a call's CPU
    (bench/RESULTS.md, "What metrics and traces cost"). Here the decision comes first. A request that continues a
    caller's sampled `traceparent` header, or one of the new traces HYPERGUILD_TRACE_SAMPLE keeps, gets a SERVER
    span (method, route, status; the caller's span as its parent); any other request runs with no span and with
    the SQL and HTTP instrumentations standing down. A sampled `traceparent` in the MCP request's `_meta` is still
    continued by `mcp_span` (its own and the search spans; not the SQL ones, which stood down).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not _configured:
            return self.get_response(request)
        parent = None
        if _sample_rate is not None and _traceparent_only and "HTTP_TRACEPARENT" not in request.META:
            # A new trace: kept or not without first reading the headers into a context (that was three quarters
            # of what a dropped request cost, bench/RESULTS.md "What metrics and traces cost").
            keep = random.random() < _sample_rate  # noqa: S311 - sampling, not secrecy
        else:
            parent = propagate.extract(request.headers)
            caller = trace.get_current_span(parent).get_span_context()
            keep = _sample_rate is None or (
                caller.trace_flags.sampled if caller.is_valid else random.random() < _sample_rate  # noqa: S311
            )
        if not keep:
            with suppress_instrumentation():
                return self.get_response(request)
        token = otel_context.attach(parent if parent is not None else propagate.extract(request.headers))
        try:
            attributes = {
                "http.request.method": request.method or "",
                "url.path": request.path,
                "client.address": request.META.get("REMOTE_ADDR", ""),
            }
            with tracer().start_as_current_span(
                request.method or "HTTP", kind=trace.SpanKind.SERVER, attributes=attributes
            ) as server:
                response = self.get_response(request)
                route = getattr(request.resolver_match, "route", "")
                if route:
                    server.update_name(f"{request.method} /{route}")
                    server.set_attribute("http.route", f"/{route}")
                server.set_attribute("http.response.status_code", response.status_code)
                if response.status_code >= 500:
                    server.set_status(trace.StatusCode.ERROR)
                return response
        finally:
            otel_context.detach(token)


@contextmanager
def mcp_span(endpoint: str, message: JSON, *, person_id: int | None, revision: str | None) -> Iterator[trace.Span]:
    """The span of one MCP message. `params._meta.traceparent` continues the caller's trace."""
    method = message.get("method") or ""
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    tool = params.get("name") if method == "tools/call" and isinstance(params.get("name"), str) else None
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    carrier = {k: v for k, v in meta.items() if k in ("traceparent", "tracestate") and isinstance(v, str)}
    token = None
    if carrier:
        token = otel_context.attach(propagate.extract(carrier))
    try:
        if in_unsampled_trace():
            # Neither the caller's header nor its `_meta` asked for this trace and the sampler dropped it: the
            # instrumentations (a span per SQL query, per outbound call) skip their work for the rest of the call.
            with suppress_instrumentation():
                yield trace.get_current_span()
            return
        name = f"mcp {method} {tool}" if tool else f"mcp {method}"
        with span(
            name,
            **{
                "mcp.endpoint": endpoint,
                "mcp.method.name": method,
                "mcp.tool.name": tool,
                "mcp.protocol.version": revision,
                "enduser.id": str(person_id) if person_id is not None else None,
            },
        ) as s:
            yield s
    finally:
        if token is not None:
            otel_context.detach(token)
