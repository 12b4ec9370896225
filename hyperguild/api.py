"""Shared REST plumbing: JSON errors a user can act on."""

from __future__ import annotations

from rest_framework.exceptions import NotAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from hyperguild.mcp.registry import get_endpoint
from hyperguild.mcp.views import BearerTokenAuthentication, HasClient


def exception_handler(exc, context):
    """DRF errors as `{"error": message, "detail": ...}` JSON."""
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    if isinstance(detail, dict) and "detail" in detail and len(detail) == 1:
        message = str(detail["detail"])
    elif isinstance(detail, dict):
        message = "; ".join(
            f"{field}: {' '.join(str(m) for m in (msgs if isinstance(msgs, list) else [msgs]))}"
            for field, msgs in detail.items()
        )
    else:
        message = str(detail)
    return Response({"error": message, "detail": detail}, status=response.status_code, headers=response.headers)


class EndpointTokenAPIView(APIView):
    """A REST view authenticated like an MCP endpoint: the same bearer token, 401 + WWW-Authenticate.

    Subclasses set `token_endpoint`, the name of a registered MCP endpoint.
    """

    token_endpoint: str = ""
    throttle_classes: list = []

    def get_authenticators(self):
        return [BearerTokenAuthentication(get_endpoint(self.token_endpoint))]

    def get_permissions(self):
        return [HasClient()]

    def permission_denied(self, request, message=None, code=None):
        if request.authenticators and not request.successful_authenticator:
            setting = get_endpoint(self.token_endpoint).token_setting
            raise NotAuthenticated(f"This endpoint needs Authorization: Bearer <{setting}>.")
        super().permission_denied(request, message=message, code=code)
