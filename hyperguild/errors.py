"""The base of every domain error.

Domain code (actions, search, routing, roots…) raises a subclass of its
app's base error (`brain.errors.BrainError`, `supervisor.errors.SupervisorError`,
`sessions.errors.SessionsError`), never a transport error. Each door
translates: an app's `tools.py` declares its base with
`Endpoint.translate_errors()` so the MCP engine answers an `isError` tool
result, and the REST views answer the JSON error shape of `hyperguild.api`.
"""

from __future__ import annotations

from typing import TypedDict

from hyperguild.lib.typed import JSON


class DomainError(Exception):
    """A request the service refuses.

    `message` says what to change; `details` holds per-field messages (`{"field": "message"}`, shown by REST
    as `error.details`); `data` is structured detail MCP callers get after the message (e.g. entry ids).
    """

    # The HTTP status a REST view answers with (422 would be as defensible; 400 is what the API always used).
    http_status = 400
    code = "invalid"

    def __init__(self, message: str, *, details: dict[str, str] | None = None, data: JSON | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.data = data


class ErrorDetail(TypedDict):
    code: str
    message: str
    details: dict[str, str]  # per-field messages; {} when none


class ErrorBody(TypedDict):
    error: ErrorDetail


def error_body(code: str, message: str, details: dict[str, str] | None = None) -> ErrorBody:
    """The one JSON error shape of every REST endpoint (and of HTTP-level MCP refusals)."""
    return {"error": {"code": code, "message": message, "details": details or {}}}
