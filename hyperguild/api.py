"""Shared REST plumbing: one JSON error shape for every REST endpoint.

Every error a REST view answers (bad input, missing token, unknown object,
a refusal of domain code, a service that is off) has the same body:

    {"error": {"code": "invalid", "message": "what to change", "details": {...}}}

`code` is a stable word (invalid, not_authenticated, not_found,
method_not_allowed, unavailable, …), `message` one sentence a person can act
on, `details` the per-field messages (empty when there are none). Views raise
DRF exceptions or the apps' DomainErrors; `exception_handler` (set as DRF's
EXCEPTION_HANDLER) turns both into that shape with the right status.
"""

from __future__ import annotations

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import APIException, NotAuthenticated, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from hyperguild.errors import DomainError, error_body
from hyperguild.mcp.registry import get_endpoint
from hyperguild.mcp.views import BearerTokenAuthentication, HasClient, InsufficientScope, challenge_for
from hyperguild.providers import permission_refusal


class Unavailable(APIException):
    """503: a service this endpoint needs is off or down; the message says what to configure."""

    status_code = 503
    default_code = "unavailable"
    default_detail = "A service this endpoint needs is not available."


def _messages(value: object) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{key}: {_messages(inner)}" for key, inner in value.items())
    if isinstance(value, list):
        return " ".join(_messages(inner) for inner in value)
    return str(value)


def _details(value: object) -> dict[str, str]:
    """DRF's field errors as {field: "message"} (nested fields as a/b)."""
    if not isinstance(value, dict):
        return {}
    return {str(key): _messages(inner) for key, inner in value.items()}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF errors and DomainErrors as the one JSON error shape."""
    if isinstance(exc, DomainError):
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.http_status)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    code = exc.default_code if isinstance(exc, APIException) else "error"
    if isinstance(detail, dict) and set(detail) == {"detail"}:
        message, details = str(detail["detail"]), {}
        code = getattr(detail["detail"], "code", None) or code
    else:
        message, details = _messages(detail), _details(detail)
    return Response(error_body(code, message, details), status=response.status_code, headers=response.headers)


class EndpointTokenAPIView(APIView):
    """A REST view authenticated like an MCP endpoint: the same bearer tokens, 401/403 + WWW-Authenticate.

    Subclasses set `token_endpoint`, the name of a registered MCP endpoint, and `token_scope`, the
    scope a caller needs (empty: any of the endpoint's); `required_scope()` may vary it by method.
    """

    token_endpoint: str = ""
    token_scope: str = ""
    throttle_classes: list[type] = []

    def required_scope(self, request: Request) -> str | tuple[str, ...] | None:
        return self.token_scope or None

    def get_authenticators(self) -> list[BaseAuthentication]:
        return [BearerTokenAuthentication(get_endpoint(self.token_endpoint), self.required_scope(self.request))]

    def get_permissions(self) -> list[BasePermission]:
        return [HasClient()]

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if isinstance(exc, InsufficientScope):
            response["WWW-Authenticate"] = challenge_for(self.request, get_endpoint(self.token_endpoint))
        return response

    def require_right(self, right: str) -> None:
        """The one permission check (people.permissions) for a right finer than the view's scope: 403 if refused."""
        refusal = permission_refusal(self.request.user, right)
        if refusal:
            raise PermissionDenied(refusal)

    def permission_denied(self, request: Request, message: str | None = None, code: str | None = None) -> None:
        if request.authenticators and not request.successful_authenticator:
            setting = get_endpoint(self.token_endpoint).token_setting
            raise NotAuthenticated(f"This endpoint needs Authorization: Bearer <{setting}>.")
        super().permission_denied(request, message=message, code=code)
