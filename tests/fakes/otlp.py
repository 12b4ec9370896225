"""A fake OpenTelemetry collector: OTLP/HTTP on 127.0.0.1, decoding each export's protobuf.

with FakeCollector() as collector:   # OTEL_EXPORTER_OTLP_ENDPOINT=collector.url
    ...
    collector.spans()                # every span received so far, as `ReceivedSpan`s
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fakes.http import FakeHTTPServer, Request, Response


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str  # hex, as in a traceparent header
    span_id: str
    parent_span_id: str  # "" for a root span
    attributes: dict


def _value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class FakeCollector(FakeHTTPServer):
    name = "fake-otlp"

    def __init__(self) -> None:
        super().__init__()
        self.received: list[ReceivedSpan] = []

    def handle(self, request: Request) -> Response:
        if request.path != "/v1/traces":
            return Response(404, {"error": f"no OTLP signal at {request.path}"})
        raw = request.raw
        if request.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        export = ExportTraceServiceRequest()
        export.ParseFromString(raw)
        spans = [
            ReceivedSpan(
                name=span.name,
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex(),
                attributes={attribute.key: _value(attribute.value) for attribute in span.attributes},
            )
            for resource_spans in export.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        with self.lock:
            self.received.extend(spans)
        body = ExportTraceServiceResponse().SerializeToString()
        return Response(200, raw=body, headers={"Content-Type": "application/x-protobuf"})

    def spans(self, trace_id: str | None = None) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.received if trace_id is None or s.trace_id == trace_id]
