"""The door every request passes first: request ids, bad Host, body size, JSON depth, hostile text.

`GuardMiddleware` (first in MIDDLEWARE) gives each request an id (`request.request_id`,
answered as `X-Request-Id`) and refuses, before any view runs:

- a Host outside ALLOWED_HOSTS: 400 JSON, one log line (no traceback, at most one per
  `BAD_HOST_LOG_EVERY_SECONDS` with a count, so bad Hosts cannot flood the log);
- a NUL or a lone surrogate in the URL path, a query parameter or a UI form field: 400;
- on the JSON API (`/mcp/*` and every DRF view) a body over the limit: 413 JSON
  (HYPERGUILD_MCP_MAX_BODY on /mcp/*, HYPERGUILD_REST_MAX_BODY elsewhere);
- on REST JSON bodies: nesting deeper than JSON_MAX_DEPTH (hyperguild.lib.limits), NaN/Infinity,
  NUL or lone surrogates anywhere: 400 JSON with the one error shape. (/mcp/* runs the
  same checks in its view, to answer JSON-RPC errors.)

`server_error` (handler500) answers what still goes wrong: a database outage is 503 with
Retry-After (JSON on the API, a friendly page in the UI), anything else a 500; neither
carries SQL, paths or exception text. The log keeps the detail under the request id.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost, MiddlewareNotUsed, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.urls import Resolver404, resolve
from rest_framework.views import APIView

from hyperguild.errors import error_body
from hyperguild.lib import admission
from hyperguild.lib.limits import JSON_MAX_DEPTH, InputRejected, loads_limited, text_problem

logger = logging.getLogger("hyperguild.http")

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
BAD_HOST_LOG_EVERY_SECONDS = 60.0
# The database errors that mean "not reachable now", not "this request is wrong".
OUTAGE_ERRORS = (OperationalError, InterfaceError)
# Retry-After (seconds) of the 503 answered while the database is unreachable: long enough for a restart of the
# embedded server (serve starts it again within seconds), short enough that a client does not give up.
OUTAGE_RETRY_AFTER_SECONDS = 5

_bad_hosts = {"count": 0, "logged_at": 0.0}
_bad_hosts_lock = threading.Lock()


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


def is_api_request(request: HttpRequest) -> bool:
    """JSON callers: /mcp/*, /health and every DRF view. Everything else is the browser UI."""
    path = request.path_info
    if path.startswith("/mcp/") or path == "/health":
        return True
    try:
        match = resolve(path)
    except (Resolver404, UnicodeError, ValueError):
        return False
    view_class = getattr(match.func, "cls", None)

    return isinstance(view_class, type) and issubclass(view_class, APIView)


def json_error(request: HttpRequest, status: int, code: str, message: str) -> JsonResponse:
    """The one REST error shape; the request id travels in the X-Request-Id header."""
    response = JsonResponse(error_body(code, message), status=status)
    request_id = getattr(request, "request_id", "")
    if request_id:
        response["X-Request-Id"] = request_id
    return response


def _log_bad_host(host: str) -> None:
    now = time.monotonic()
    with _bad_hosts_lock:
        _bad_hosts["count"] += 1
        if now - _bad_hosts["logged_at"] < BAD_HOST_LOG_EVERY_SECONDS:
            return
        count, _bad_hosts["count"], _bad_hosts["logged_at"] = _bad_hosts["count"], 0, now
    logger.warning("refused %d request(s) with a Host not in ALLOWED_HOSTS (latest: %r)", count, host[:100])


class GuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = new_request_id()
        request.request_id = request_id  # type: ignore[attr-defined]  # our own attribute: logs and server_error read it
        response = self.refuse(request) or self.get_response(request)
        response["X-Request-Id"] = request_id
        return response

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        try:
            request.get_host()
        except DisallowedHost:
            _log_bad_host(request.META.get("HTTP_HOST", ""))
            return json_error(
                request,
                400,
                "bad_host",
                "The Host header is not one this server answers to (HYPERGUILD_ALLOWED_HOSTS).",
            )
        problem = text_problem(request.path_info)
        if problem:
            return self._bad(request, f"The URL path {problem}.")
        for name, values in request.GET.lists():
            problem = text_problem(name) or next(filter(None, map(text_problem, values)), None)
            if problem:
                return self._bad(request, f"The query parameter {name[:40]!r} {problem}.")
        if request.method not in BODY_METHODS:
            return None
        if not is_api_request(request):
            return self._check_form(request)
        is_mcp = request.path_info.startswith("/mcp/")
        limit, setting = (
            (settings.HYPERGUILD_MCP_MAX_BODY, "HYPERGUILD_MCP_MAX_BODY")
            if is_mcp
            else (settings.HYPERGUILD_REST_MAX_BODY, "HYPERGUILD_REST_MAX_BODY")
        )
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            return self._too_large(request, declared, limit, setting)
        try:
            body = request.body
        except RequestDataTooBig:
            return self._too_large(request, declared, limit, setting)
        if len(body) > limit:
            return self._too_large(request, len(body), limit, setting)
        if is_mcp or not body.strip():
            return None
        content_type = request.META.get("CONTENT_TYPE", "")
        if "json" not in content_type:
            return None  # DRF answers 415 for what it cannot parse
        try:
            loads_limited(body, JSON_MAX_DEPTH)
        except InputRejected as exc:
            return json_error(request, 400, "invalid", exc.message)
        return None

    def _check_form(self, request: HttpRequest) -> HttpResponse | None:
        """UI forms: a NUL or lone surrogate in any field is refused before a view (or the database) sees it."""
        if not request.META.get("CONTENT_TYPE", "").startswith(
            ("application/x-www-form-urlencoded", "multipart/form-data")
        ):
            return None
        try:
            fields = list(request.POST.lists())
        except RequestDataTooBig:
            return HttpResponse("The form is too large.", status=413, content_type="text/plain; charset=utf-8")
        for name, values in fields:
            problem = text_problem(name) or next(filter(None, map(text_problem, values)), None)
            if problem:
                return self._bad(request, f"The form field {name[:40]!r} {problem}.")
        return None

    def _bad(self, request: HttpRequest, message: str) -> HttpResponse:
        if is_api_request(request):
            return json_error(request, 400, "invalid", message)
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")

    def _too_large(self, request: HttpRequest, size: int, limit: int, setting: str) -> HttpResponse:
        shown = f"{size} bytes" if size else "The request body"
        message = f"{shown} is over the limit of {limit} bytes ({setting}); send less per request."
        if request.path_info.startswith("/mcp/"):
            payload = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
            return JsonResponse(payload, status=413)
        return json_error(request, 413, "too_large", message)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a database outage is a 503 with Retry-After; nothing internal reaches the client."""
    exc = sys.exc_info()[1]
    request_id = getattr(request, "request_id", "") or new_request_id()
    request.request_id = request_id  # type: ignore[attr-defined]  # our own attribute (GuardMiddleware sets it first)
    outage = isinstance(exc, OUTAGE_ERRORS)
    response: HttpResponse
    logger.error(
        "request %s %s %s failed: %s: %s", request_id, request.method, request.path_info[:200], type(exc).__name__, exc
    )
    if outage:
        retry = str(OUTAGE_RETRY_AFTER_SECONDS)
        message = f"The database is not reachable right now; try again in {retry} s (request id {request_id})."
        if is_api_request(request):
            response = json_error(request, 503, "unavailable", message)
        else:
            html = loader.render_to_string("503.html", {"retry_after": retry, "request_id": request_id})
            response = HttpResponse(html, status=503)
        response["Retry-After"] = retry
    elif is_api_request(request):
        response = json_error(
            request,
            500,
            "internal",
            f"Something went wrong on the server; the log has the detail (request id {request_id}).",
        )
    else:
        html = loader.render_to_string("500.html", {"request_id": request_id})
        response = HttpResponse(html, status=500)
    response["X-Request-Id"] = request_id
    return response


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: JSON on the API; a plain page in the UI. No traceback is the caller's business."""
    if isinstance(exception, RequestDataTooBig):
        return json_error(request, 413, "too_large", "The request body is too large; send less per request.")
    message = "The request could not be understood."
    if is_api_request(request):
        return json_error(request, 400, "bad_request", message)
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: JSON for API callers and for any client that does not ask for HTML; a plain page for browsers."""
    accept = request.META.get("HTTP_ACCEPT", "")
    if is_api_request(request) or "text/html" not in accept:
        return json_error(request, 404, "not_found", "Nothing here: check the path.")
    return HttpResponse("Not found.", status=404, content_type="text/plain; charset=utf-8")


MCP_PREFIX = "/mcp/"
# A JSON-RPC notification has a "notifications/..." method; a peek at the body's start is enough to tell.
NOTIFICATION_RE = re.compile(rb'\s*\{.*?"method"\s*:\s*"notifications/', re.DOTALL)
NOTIFICATION_MAX_BYTES = 4096


def is_notification(request: HttpRequest) -> bool:
    """A small POST to /mcp/* whose JSON-RPC method is a notification (anything else is treated as a call)."""
    if request.method != "POST" or not request.path_info.startswith(MCP_PREFIX):
        return False
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    if not 0 < length <= NOTIFICATION_MAX_BYTES:
        return False
    try:
        return NOTIFICATION_RE.match(request.body) is not None
    except Exception:  # an unreadable body: the guard answers it in the chain
        return False


class AdmissionMiddleware:
    """At most HYPERGUILD_WEB_CONCURRENCY requests of a web process run at once, in arrival order
    (hyperguild/lib/admission.py); 0 leaves the web server's own threads as the only limit.

    Kept by the side-by-side benchmark in bench/RESULTS.md ("Stock and custom web serving"): on granian with
    32 threads, it beats the best stock configuration at 50 clients (client p99 -42 % with the writer at
    100,000 notes; -15 % at 2,000; server p99 -70 % or more at both); the default is now 8 threads, with it.
    A JSON-RPC notification (a cancellation above all) never queues behind the calls it is about; the
    response of a streamed call leaves the gate before its first byte.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not settings.HYPERGUILD_WEB_CONCURRENCY:
            raise MiddlewareNotUsed
        self.get_response = get_response
        self.gate = admission.Gate(settings.HYPERGUILD_WEB_CONCURRENCY)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_notification(request):
            return self.get_response(request)
        with admission.admitted(self.gate):
            return self.get_response(request)
