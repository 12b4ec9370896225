"""Streamable HTTP transport: one DRF view serves every `/mcp/<endpoint>`.

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
import uuid
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connections
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import BasePermission
from rest_framework.views import APIView

from hyperguild.actions import do_record_mcp_cancellation
from hyperguild.auth import BearerRefused, authenticate_bearer, resource_metadata_url
from hyperguild.errors import error_body
from hyperguild.lib.limits import InputRejected, hostile_value_problem, loads_limited
from hyperguild.mcp.cancellation import RUNNING, client_key, new_session_id, request_id_key
from hyperguild.mcp.engine import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    CallRecord,
    Dispatcher,
    RpcError,
    classify,
    error_response,
)
from hyperguild.mcp.registry import Endpoint, ToolContext, find_endpoint
from hyperguild.mcp.revision import Rejection, Revision, decide, http_status_for
from hyperguild.mcp.tasks import owner_digest
from hyperguild.metrics import observe_mcp
from hyperguild.tracing import carry_context, mcp_span

logger = logging.getLogger("hyperguild.mcp")

# An idle SSE stream gets a comment line this often, so proxies and clients
# see a live connection during long tool calls.
SSE_KEEPALIVE_SECONDS = 15.0
# The methods a metric may name (any other method a client sends is counted as "other").
KNOWN_METHODS = frozenset(
    {"initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "completion/complete",
     "resources/list", "resources/read", "resources/templates/list", "server/discover", "tasks/get", "tasks/update",
     "tasks/cancel", "tasks/list", "notifications/initialized", "notifications/cancelled", "response"}
)  # fmt: skip


class InsufficientScope(exceptions.PermissionDenied):
    default_code = "insufficient_scope"


class BearerTokenAuthentication(BaseAuthentication):
    """DRF's face of `hyperguild.auth.authenticate_bearer`: request.user becomes the caller's Identity."""

    def __init__(self, endpoint: Endpoint, scope: str | tuple[str, ...] | None = None):
        self.endpoint = endpoint
        # What the caller must hold: one scope, or any of several (default: any of the endpoint's).
        self.scope = endpoint.scopes if scope is None else scope

    def authenticate(self, request):
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

    def authenticate_header(self, request) -> str:
        return challenge_for(request, self.endpoint)


def challenge_for(request, endpoint: Endpoint) -> str:
    """`WWW-Authenticate` for a refused request: the realm, the error if any, where the metadata is."""
    refused = getattr(request, "bearer_refused", None) or BearerRefused(
        401, "", resource_metadata=resource_metadata_url(request, endpoint)
    )
    return refused.challenge(realm=f"hyperguild-{endpoint.name}")


class HasClient(BasePermission):
    message = "This endpoint needs Authorization: Bearer <token>."

    def has_permission(self, request, view) -> bool:
        return request.user is not None and getattr(request.user, "is_authenticated", False)


class AcceptAnything(BaseContentNegotiation):
    """Never refuse a request for its Accept header; MCP decides the format itself."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def person_id(request) -> int | None:
    """The signed-in person's id for traces (None for a service token or no one)."""
    user = getattr(request, "user", None)
    return user.pk if getattr(user, "is_authenticated", False) and isinstance(getattr(user, "pk", None), int) else None


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


def parse_message(body: bytes, max_depth: int) -> Any:
    """One JSON-RPC message: InputRejected when too deep, not JSON or holding NaN/Infinity.

    Text problems (NUL, lone surrogates) are checked after classification, to answer with the id.
    """
    try:
        return loads_limited(body, max_depth)
    except InputRejected as exc:
        if "NUL" in exc.message or "surrogate" in exc.message:
            return json.loads(body)  # well-formed: the caller refuses it with the request's id
        raise


def request_headers(request) -> dict[str, str]:
    """The HTTP headers of a request, keyed in lower case (`mcp-protocol-version`, …).

    Values lose the whitespace around them: RFC 9110 §5.5 excludes it from the field value.
    """
    return {
        key[5:].lower().replace("_", "-"): value.strip(" \t")
        for key, value in request.META.items()
        if key.startswith("HTTP_")
    }


def declared_revision(request) -> str:
    """The revision a request claims in its header, for log lines written before `decide` ran."""
    header = request.META.get("HTTP_MCP_PROTOCOL_VERSION", "") if request is not None else ""
    return header[:40] or "undeclared"


def raw_request_headers(request) -> list[tuple[str, str]]:
    """The header lines as sent (ASGI keeps duplicates that request.META folds into one)."""
    scope = getattr(getattr(request, "_request", request), "scope", None) or {}
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope.get("headers", [])]


class McpView(APIView):
    """POST one JSON-RPC message; GET and DELETE are 405 (no server-initiated stream)."""

    http_method_names = ["get", "post", "delete"]
    parser_classes: list = []
    content_negotiation_class = AcceptAnything
    permission_classes = [HasClient]
    throttle_classes: list = []

    def dispatch(self, request, *args, **kwargs):
        self.started = time.monotonic()
        self.mcp_endpoint = find_endpoint(kwargs.get("endpoint", ""))
        if self.mcp_endpoint is None:
            return JsonResponse(error_body("not_found", f"No MCP endpoint called {kwargs.get('endpoint')!r}."), status=404)
        return super().dispatch(request, *args, **kwargs)

    def get_authenticators(self):
        endpoint = getattr(self, "mcp_endpoint", None)
        return [BearerTokenAuthentication(endpoint)] if endpoint else []

    def initial(self, request, *args, **kwargs):
        origin = request.META.get("HTTP_ORIGIN", "")
        if not origin_allowed(origin):
            raise exceptions.PermissionDenied(
                f"Origin {origin} is not allowed; add it to HYPERGUILD_ALLOWED_ORIGINS if it should be."
            )
        super().initial(request, *args, **kwargs)

    def permission_denied(self, request, message=None, code=None):
        if request.authenticators and not request.successful_authenticator:
            raise exceptions.NotAuthenticated(
                f"/mcp/{self.mcp_endpoint.name} needs Authorization: Bearer <token> "
                f"(the server's {self.mcp_endpoint.token_setting})."
            )
        super().permission_denied(request, message, code)

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        if isinstance(exc, InsufficientScope):
            response["WWW-Authenticate"] = challenge_for(self.request, self.mcp_endpoint)
        self._log(CallRecord(status=f"http {response.status_code}"), response.status_code)
        return response

    # -- POST -------------------------------------------------------------------

    def post(self, request, endpoint: str):
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

        record = CallRecord()
        try:
            # Depth-limited, and NaN/Infinity refused: `"id": NaN` is a parse error, never echoed back.
            message = parse_message(body, settings.HYPERGUILD_JSON_MAX_DEPTH)
        except InputRejected as exc:
            record.status = "parse_error"
            return self._json(error_response(None, PARSE_ERROR, f"Parse error: {exc.message}"), 400, record)
        try:
            kind = classify(message)
        except RpcError as exc:
            record.status = "invalid_request"
            request_id = message.get("id") if isinstance(message, dict) else None
            if hostile_value_problem(request_id):
                request_id = None
            return self._json(error_response(request_id, exc.code, exc.message), 400, record)
        problem = hostile_value_problem(message)
        if problem:
            # A NUL or lone surrogate can be neither stored nor echoed: refuse it before any tool sees it.
            record.status = "invalid_params"
            request_id = message.get("id")
            if kind != "request" or hostile_value_problem(request_id):
                return self._json(error_response(None, INVALID_REQUEST, problem), 400, record)
            return self._json(error_response(request_id, INVALID_PARAMS, problem), 200, record)

        client = client_key(request)
        if kind != "request":
            record.method = message.get("method", "response")
            if message.get("method") == "notifications/cancelled":
                params = message.get("params") or {}
                cancelled = RUNNING.cancel(self.mcp_endpoint.name, params.get("requestId"), client)
                record.extra["cancelled_calls"] = cancelled
                try:
                    # The call may run on another replica: leave the cancellation where it can see it.
                    do_record_mcp_cancellation(
                        self.mcp_endpoint.name,
                        request_id_key(params.get("requestId"), client),
                        str(params.get("reason", "")),
                    )
                except Exception:  # a notification is answered 202 whatever happens
                    logger.exception("could not record the cancellation (revision %s)", record.revision)
            return self._accepted(record)

        revision = decide(message, request_headers(request), raw_request_headers(request))
        if isinstance(revision, Rejection):
            record.method, record.status = message["method"], f"rejected {revision.code}"
            record.revision = declared_revision(request)  # what it claimed; it was refused before dispatch
            response = error_response(message["id"], revision.code, revision.message, revision.data)
            return self._json(response, revision.http_status, record)

        params = message.get("params") or {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        progress_token = meta.get("progressToken")
        accept = request.META.get("HTTP_ACCEPT", "")
        wants_sse_only = "text/event-stream" in accept and "application/json" not in accept and "*/*" not in accept
        accepts_sse = "text/event-stream" in accept or "*/*" in accept
        streams = message["method"] == "tools/call" and progress_token is not None and accepts_sse
        if wants_sse_only or streams:
            return self._stream(
                message, progress_token, record, client, revision,
                owner_digest(request.META.get("HTTP_AUTHORIZATION", "")), asynchronous="wsgi.input" not in request.META,
            )  # fmt: skip

        ctx = ToolContext(
            endpoint=self.mcp_endpoint.name, request_id=message["id"], progress_token=progress_token, caller=client,
            identity=request.user,
        )
        owner = owner_digest(request.META.get("HTTP_AUTHORIZATION", ""))
        with mcp_span(self.mcp_endpoint.name, message, person_id=person_id(request), revision=revision.version):
            response = Dispatcher(self.mcp_endpoint, owner).handle(message, ctx, record, revision)
        status = http_status_for(response["error"]["code"]) if revision.modern and "error" in response else 200
        http = self._json(response, status, record)
        if message["method"] == "initialize" and not revision.modern and not request.META.get("HTTP_MCP_SESSION_ID"):
            # Clients send it back on every request: it scopes cancellations to this client.
            http["Mcp-Session-Id"] = new_session_id()
        return http

    # -- responses ----------------------------------------------------------------

    def _json(self, payload: dict, status: int, record: CallRecord) -> HttpResponse:
        response = HttpResponse(json.dumps(payload, ensure_ascii=False), status=status, content_type="application/json")
        # Time spent in this process, for clients and benchmarks (bench_load reads it).
        response["Server-Timing"] = f"app;dur={self._log(record, status)}"
        return response

    def _accepted(self, record: CallRecord) -> HttpResponse:
        self._log(record, 202)
        return HttpResponse(status=202)

    def _too_large(self, size: int, limit: int) -> HttpResponse:
        record = CallRecord(status="too_large")
        message = f"Request body of {size} bytes is over the limit of {limit} bytes (HYPERGUILD_MCP_MAX_BODY)."
        return self._json(error_response(None, INVALID_REQUEST, message), 413, record)

    def _stream(
        self, message: dict, progress_token: Any, record: CallRecord, client: str, revision: Revision, owner: str,
        asynchronous: bool,
    ) -> StreamingHttpResponse:
        """Progress notifications, then the result, as SSE. The call runs on a thread of its own; the stream is
        an async generator under an ASGI server and a plain one under a WSGI server (Django would otherwise
        collect the whole stream before sending it). Either way, closing the stream (the client went away:
        at once under ASGI, at the next keep-alive under WSGI) cancels the call."""
        endpoint = self.mcp_endpoint
        view = self

        def start(put) -> ToolContext:
            """Run the call on its own thread; `put((kind, payload))` receives its events and, last, its answer."""
            ctx = ToolContext(
                endpoint=endpoint.name,
                request_id=message["id"],
                progress_token=progress_token,
                emit=lambda payload: put(("event", payload)),
                caller=client,
                identity=view.request.user,
            )

            @carry_context  # the handler's thread continues the request's trace
            def run() -> None:
                try:
                    with mcp_span(endpoint.name, message, person_id=person_id(view.request), revision=revision.version):
                        response = Dispatcher(endpoint, owner).handle(message, ctx, record, revision)
                except Exception:  # never leave the stream without an answer
                    incident = uuid.uuid4().hex[:16]
                    logger.exception("MCP dispatch failed (request id %s, revision %s)", incident, record.revision)
                    response = error_response(
                        message["id"], INTERNAL_ERROR,
                        f"Internal error; the server log has the detail (request id {incident})",
                    )  # fmt: skip
                finally:
                    connections.close_all()
                put(("final", response))

            threading.Thread(target=run, name=f"mcp-{endpoint.name}-{message['id']}", daemon=True).start()
            return ctx

        def event(payload: dict) -> bytes:
            return f"event: message\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

        def finished(ctx: ToolContext) -> None:
            # Reached on normal completion and when the client goes away (the stream is closed): stop the handler.
            ctx.cancelled.set()
            view._log(record, 200)

        async def async_events():
            loop = asyncio.get_running_loop()
            events: asyncio.Queue = asyncio.Queue()
            ctx = start(lambda item: loop.call_soon_threadsafe(events.put_nowait, item))
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
                finished(ctx)

        def sync_events():
            events: queue.SimpleQueue = queue.SimpleQueue()
            ctx = start(events.put)
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
                finished(ctx)

        response = StreamingHttpResponse(
            async_events() if asynchronous else sync_events(), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response

    def _log(self, record: CallRecord, status: int) -> float:
        duration_ms = round((time.monotonic() - getattr(self, "started", time.monotonic())) * 1000, 1)
        endpoint = self.mcp_endpoint.name if getattr(self, "mcp_endpoint", None) else "?"
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
        known_endpoint = getattr(self, "mcp_endpoint", None)
        # Labels only from names the server knows: a client's made-up method or tool must not add series.
        method = record.method if record.method in KNOWN_METHODS else ("other" if record.method else "")
        tool = record.tool if known_endpoint is not None and record.tool in known_endpoint.tools else ""
        observe_mcp(endpoint if known_endpoint is not None else "unknown", method, tool, record.status, duration_ms / 1000)
        return duration_ms
