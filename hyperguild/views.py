"""The core's own view: the icon browsers ask for."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

FAVICON = (settings.BASE_DIR / "static" / "favicon.svg").read_bytes()


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """`/favicon.ico`, which browsers ask for on their own: the same icon as the pages' `<link rel=icon>`."""
    response = HttpResponse(FAVICON, content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response
