"""Streamable HTTP transport: one DRF view serves every `/mcp/<endpoint>`.

The view does bytes (the body and its limit, JSON or SSE framing), auth (bearer token or OAuth
grant, origin) and HTTP (statuses, headers, `Mcp-Session-Id`); it hands the body to
`engine.receive`, which owns all of JSON-RPC, and never looks inside a message itself.

Three DRF defaults fight the protocol and are overridden here:
- content negotiation runs before dispatch, so a GET with `Accept:
  text/event-stream` would get 406 instead of 405: `AcceptAnything`;
- a 401 carries `WWW-Authenticate` only if the first authenticator has
  `authenticate_header`: `BearerTokenAuthentication` has one;
- `SessionAuthentication` enforces CSRF on POST: it is not used at all.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import BasePermission
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from hyperguild.errors import error_body
from hyperguild.lib.typed import JSON
from hyperguild.mcp.cancellation import client_key, new_session_id
from hyperguild.mcp.engine import Answer, Call, Caller, CallRecord, receive, unread
from hyperguild.mcp.mcp_tasks import owner_digest
from hyperguild.mcp.registry import Endpoint, find_endpoint
from hyperguild.providers import (
    BearerRefused,
    Identity,
    authenticate_bearer,
    carry_context,
    observe_mcp,
    resource_metadata_url,
)

logger = logging.getLogger("hyperguild.mcp")

# An idle SSE stream gets a comment line this often, so proxies and clients
# see a live connection during long tool calls.
SSE_KEEPALIVE_SECONDS = 15.0
# The methods a metric may name (any other method a client sends is counted as "other").
KNOWN_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "server/discover",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "tasks/list",
        "notifications/initialized",
        "notifications/cancelled",
        "response",
    }
)


class InsufficientScope(exceptions.PermissionDenied):
    default_code = "insufficient_scope"


class BearerTokenAuthentication(BaseAuthentication):
    """DRF's face of `people.auth.authenticate_bearer`: request.user becomes the caller's Identity."""

    def __init__(self, endpoint: Endpoint, scope: str | tuple[str, ...] | None = None):
        self.endpoint = endpoint
        # What the caller must hold: one scope, or any of several (default: any of the endpoint's).
        self.scope = endpoint.scopes if scope is None else scope

    def authenticate(self, request: Request) -> tuple[Identity, None]:
        try:
            identity = authenticate_bearer(request, self.scope, endpoint=self.endpoint)
        except BearerRefused as refused:
            request.bearer_refused = refused  # for the challenge header of the answer
            if refused.status == 403:
                raise InsufficientScope(refused.message) from None
            if not refused.error:
                raise exceptions.NotAuthenticated(refused.message) from None
            raise exceptions.AuthenticationFailed(refused.message) from None
        return identity, None

    def authenticate_header(self, request: Request) -> str:
        return challenge_for(request, self.endpoint)


def challenge_for(request: Request | HttpRequest, endpoint: Endpoint) -> str:
    """`WWW-Authenticate` for a refused request: the realm, the error if any, where the metadata is."""
    refused = getattr(request, "bearer_refused", None) or BearerRefused(
        401, "", resource_metadata=resource_metadata_url(request, endpoint)
    )
    return refused.challenge(realm=f"hyperguild-{endpoint.name}")


class HasClient(BasePermission):
    message = "This endpoint needs Authorization: Bearer <token>."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return request.user is not None and bool(getattr(request.user, "is_authenticated", False))


class AcceptAnything(BaseContentNegotiation):
    """Never refuse a request for its Accept header; MCP decides the format itself."""

    def select_parser(self, request: Request, parsers: list[BaseParser]) -> BaseParser | None:
        return parsers[0] if parsers else None

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


def person_id(request: Request) -> int | None:
    """The signed-in person's id for traces (None for a service token or no one)."""
    user = getattr(request, "user", None)
    pk = getattr(user, "pk", None)
    return pk if getattr(user, "is_authenticated", False) and isinstance(pk, int) else None


def origin_allowed(origin: str) -> bool:
    if not origin:
        return True  # not a browser: Origin checks protect against browsers
    try:
        parts = urlsplit(origin)
        host_port = f"{parts.scheme}://{parts.hostname}"
        if parts.hostname and ":" in parts.hostname:
            host_port = f"{parts.scheme}://[{parts.hostname}]"
        port = parts.port or ""
    except ValueError:
        return False
    candidate = f"{host_port}:{port}" if port else host_port
    for allowed in settings.HYPERGUILD_ALLOWED_ORIGINS:
        if allowed == "*" or candidate == allowed or origin == allowed:
            return True
        if allowed.endswith(":*"):
            base = allowed[:-2]
            if candidate == base or (candidate.startswith(base + ":") and candidate[len(base) + 1 :].isdigit()):
                return True
    return False


def request_headers(request: Request) -> Mapping[str, str]:
    """The HTTP headers of a request, keyed in lower case (`mcp-protocol-version`, …).

    Values lose the whitespace around them: RFC 9110 §5.5 excludes it from the field value.
    """
    return {
        key[5:].lower().replace("_", "-"): value.strip(" \t")
        for key, value in request.META.items()
        if key.startswith("HTTP_")
    }


def declared_revision(request: Request | None) -> str:
    """The revision a request claims in its header, for log lines written before `decide` ran."""
    header = request.META.get("HTTP_MCP_PROTOCOL_VERSION", "") if request is not None else ""
    return header[:40] or "undeclared"


def raw_request_headers(request: Request) -> list[tuple[str, str]]:
    """The header lines as sent (ASGI keeps duplicates that request.META folds into one)."""
    scope = getattr(getattr(request, "_request", request), "scope", None) or {}
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope.get("headers", [])]


class McpView(APIView):
    """POST one JSON-RPC message; GET and DELETE are 405 (no server-initiated stream)."""

    http_method_names = ["get", "post", "delete"]
    parser_classes: list[type[BaseParser]] = []
    content_negotiation_class = AcceptAnything
    permission_classes = [HasClient]
    throttle_classes: list[type[BaseThrottle]] = []
    mcp_endpoint: Endpoint | None = None

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        self.started = time.monotonic()
        self.mcp_endpoint = find_endpoint(kwargs.get("endpoint", ""))
        if self.mcp_endpoint is None:
            return JsonResponse(
                error_body("not_found", f"No MCP endpoint called {kwargs.get('endpoint')!r}."), status=404
            )
        return super().dispatch(request, *args, **kwargs)

    def get_authenticators(self) -> list[BaseAuthentication]:
        endpoint = getattr(self, "mcp_endpoint", None)
        return [BearerTokenAuthentication(endpoint)] if endpoint else []

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        origin = request.META.get("HTTP_ORIGIN", "")
        if not origin_allowed(origin):
            raise exceptions.PermissionDenied(
                f"Origin {origin} is not allowed; add it to HYPERGUILD_ALLOWED_ORIGINS if it should be."
            )
        super().initial(request, *args, **kwargs)

    def permission_denied(self, request: Request, message: str | None = None, code: str | None = None) -> None:
        if request.authenticators and not request.successful_authenticator:
            raise exceptions.NotAuthenticated(
                f"/mcp/{self.endpoint.name} needs Authorization: Bearer <token> "
                f"(the server's {self.endpoint.token_setting})."
            )
        super().permission_denied(request, message, code)

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if isinstance(exc, InsufficientScope):
            response["WWW-Authenticate"] = challenge_for(self.request, self.endpoint)
        self._log(CallRecord(status=f"http {response.status_code}"), response.status_code)
        return response

    # -- POST -------------------------------------------------------------------

    def post(self, request: Request, endpoint: str) -> HttpResponseBase:
        limit = settings.HYPERGUILD_MCP_MAX_BODY
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            return self._too_large(declared, limit)
        body = request.body
        if len(body) > limit:
            return self._too_large(len(body), limit)

        authorization = request.META.get("HTTP_AUTHORIZATION", "")
        caller = Caller(
            identity=request.user,
            key=client_key(request),
            owner=owner_digest(authorization),
            person_id=person_id(request),
            headers=request_headers(request),
            raw_headers=raw_request_headers(request),
        )
        outcome = receive(self.endpoint, body, caller)
        if isinstance(outcome, Answer):
            return self._send(outcome)
        accept = request.META.get("HTTP_ACCEPT", "")
        wants_sse_only = "text/event-stream" in accept and "application/json" not in accept and "*/*" not in accept
        accepts_sse = "text/event-stream" in accept or "*/*" in accept
        if wants_sse_only or (outcome.streams and accepts_sse):
            return self._stream(outcome, asynchronous="wsgi.input" not in request.META)
        answer = outcome.run()
        http = self._send(answer)
        if answer.opens_session and not request.META.get("HTTP_MCP_SESSION_ID"):
            # Clients send it back on every request: it scopes cancellations to this client.
            http["Mcp-Session-Id"] = new_session_id()
        return http

    # -- responses ----------------------------------------------------------------

    @property
    def endpoint(self) -> Endpoint:
        """The endpoint of the URL (`dispatch` answered 404 before any handler if there is none)."""
        assert self.mcp_endpoint is not None
        return self.mcp_endpoint

    def _send(self, answer: Answer) -> HttpResponse:
        if answer.message is None:
            self._log(answer.record, answer.status)
            return HttpResponse(status=answer.status)
        response = HttpResponse(
            json.dumps(answer.message, ensure_ascii=False), status=answer.status, content_type="application/json"
        )
        # Time spent in this process, for clients and benchmarks (bench_load reads it).
        response["Server-Timing"] = f"app;dur={self._log(answer.record, answer.status)}"
        return response

    def _too_large(self, size: int, limit: int) -> HttpResponse:
        reason = f"Request body of {size} bytes is over the limit of {limit} bytes (HYPERGUILD_MCP_MAX_BODY)."
        return self._send(unread(reason, 413, CallRecord(status="too_large")))

    def _stream(self, call: Call, asynchronous: bool) -> StreamingHttpResponse:
        """Progress notifications, then the result, as SSE. The call runs on a thread of its own; the stream is
        an async generator under an ASGI server and a plain one under a WSGI server (Django would otherwise
        collect the whole stream before sending it). Either way, closing the stream (the client went away:
        at once under ASGI, at the next keep-alive under WSGI) cancels the call."""
        view = self

        def start(put: Callable[[tuple[str, JSON]], object]) -> None:
            """Run the call on its own thread; `put((kind, payload))` receives its events and, last, its answer."""

            def emit(payload: JSON) -> None:
                put(("event", payload))

            @carry_context  # the handler's thread continues the request's trace
            def run() -> None:
                try:
                    answer = call.run(emit)
                finally:
                    connections.close_all()
                put(("final", dict(answer.message or {})))

            threading.Thread(target=run, name=f"mcp-{view.endpoint.name}-{call.request_id}", daemon=True).start()

        def event(payload: JSON) -> bytes:
            return f"event: message\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

        def finished() -> None:
            # Reached on normal completion and when the client goes away (the stream is closed): stop the handler.
            call.cancel()
            view._log(call.record, 200)

        async def async_events() -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            events: asyncio.Queue[tuple[str, JSON]] = asyncio.Queue()
            start(lambda item: loop.call_soon_threadsafe(events.put_nowait, item))
            try:
                while True:
                    try:
                        kind, payload = await asyncio.wait_for(events.get(), timeout=SSE_KEEPALIVE_SECONDS)
                    except TimeoutError:
                        yield b": keepalive\n\n"
                        continue
                    yield event(payload)
                    if kind == "final":
                        break
            finally:
                finished()

        def sync_events() -> Iterator[bytes]:
            events: queue.SimpleQueue[tuple[str, JSON]] = queue.SimpleQueue()
            start(events.put)
            try:
                while True:
                    try:
                        kind, payload = events.get(timeout=SSE_KEEPALIVE_SECONDS)
                    except queue.Empty:
                        yield b": keepalive\n\n"
                        continue
                    yield event(payload)
                    if kind == "final":
                        break
            finally:
                finished()

        response = StreamingHttpResponse(
            async_events() if asynchronous else sync_events(), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response

    def _log(self, record: CallRecord, status: int) -> float:
        duration_ms = round((time.monotonic() - getattr(self, "started", time.monotonic())) * 1000, 1)
        known_endpoint = getattr(self, "mcp_endpoint", None)
        endpoint = known_endpoint.name if known_endpoint is not None else "?"
        line = {
            "endpoint": endpoint,
            # Before the revision is decided (parse errors, 401, notifications) the declared one, if any.
            "revision": record.revision or declared_revision(getattr(self, "request", None)),
            "method": record.method or None,
            "tool": record.tool,
            "status": record.status,
            "http": status,
            "duration_ms": duration_ms,
            **record.extra,
        }
        logger.info("mcp %s", json.dumps(line, ensure_ascii=False))
        # Labels only from names the server knows: a client's made-up method or tool must not add series.
        method = record.method if record.method in KNOWN_METHODS else ("other" if record.method else "")
        tool = record.tool if known_endpoint is not None and record.tool in known_endpoint.tools else ""
        observe_mcp(
            endpoint if known_endpoint is not None else "unknown", method, tool, record.status, duration_ms / 1000
        )
        return duration_ms
