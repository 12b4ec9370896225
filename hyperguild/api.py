"""Shared REST plumbing: JSON errors a user can act on."""

from __future__ import annotations

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


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
