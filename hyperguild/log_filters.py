"""Logging filters named in settings.LOGGING (imported by logging's configuration: no Django models here)."""

from __future__ import annotations

import logging


class ExpectedMcpNotAllowed(logging.Filter):
    """Drop django.request's WARNING for a GET or DELETE on an MCP endpoint answered 405.

    The MCP Streamable HTTP transport asks servers that offer no server-initiated stream to answer
    GET with 405, and Claude Code tries it on every connection: an expected answer, not a problem
    worth a WARNING line each time. Every other 4xx is still logged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if getattr(record, "status_code", None) != 405 or request is None:
            return True
        path = getattr(request, "path", "") or ""
        return not (path.startswith("/mcp/") and getattr(request, "method", "") in ("GET", "DELETE"))
