"""Cancellations that reach another replica than the one running the call.

The view records every `notifications/cancelled` in the database
(`McpCancellation`) besides cancelling matching calls in its own process.
While a process has calls in flight, one watcher thread reads the records
made since the oldest of them started (one query a second) and sets the
cancel flag of each call whose endpoint and request id match a record made
after the call began.

Scope: a cancellation stops only calls of the client that sent it, with the
credential that started them (one person never cancels another's call).
Clients reuse small JSON-RPC ids and may share one token, so the id alone is
not enough: calls and cancellations are keyed on (endpoint, client key, id).
The client key is a digest of the Authorization header and the `Mcp-Session-Id` header, which the server hands out
in its answer to `initialize` and every conforming client (Claude Code and
the official SDKs) sends back on each later request; a client that sends
none is keyed on its address and User-Agent (two such clients behind one
address with the same User-Agent still share a scope).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.http import HttpRequest

from hyperguild.mcp.registry import ToolContext
from hyperguild.models import McpCancellation

logger = logging.getLogger("hyperguild.mcp")

POLL_SECONDS = 1.0

_lock = threading.Lock()
_thread: threading.Thread | None = None


def new_session_id() -> str:
    """An Mcp-Session-Id for a client that has none (visible ASCII, unguessable)."""
    return secrets.token_hex(16)


def session_client_key(session_id: str) -> str:
    """The client key of a caller that sends `Mcp-Session-Id: <session_id>`."""
    return "s:" + hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:24]


def credential_key(authorization: str) -> str:
    """The part of a client key that names the credential (a digest of the Authorization header, never the token)."""
    return "c:" + hashlib.sha256(authorization.encode("utf-8", "replace")).hexdigest()[:16]


def session_caller_key(session_id: str, authorization: str = "") -> str:
    """The client key of a caller that sends `Mcp-Session-Id: <session_id>` with this Authorization header."""
    return f"{credential_key(authorization)}/{session_client_key(session_id)}"


def client_key(request: HttpRequest) -> str:
    """Who is calling: the credential (a digest of the Authorization header), then the Mcp-Session-Id if sent,
    else a digest of the address and User-Agent.

    The credential comes first so that one person can never cancel another's call, whatever session id or
    address they share or guess: a cancellation matches only calls made with the same credential."""
    authorization = request.META.get("HTTP_AUTHORIZATION", "")
    session = request.META.get("HTTP_MCP_SESSION_ID", "").strip()
    if session:
        return session_caller_key(session, authorization)
    who = f"{request.META.get('REMOTE_ADDR', '')}|{request.META.get('HTTP_USER_AGENT', '')}"
    return f"{credential_key(authorization)}/a:" + hashlib.sha256(who.encode("utf-8", "replace")).hexdigest()[:24]


def request_id_key(request_id: Any, caller: str = "") -> str:
    """A JSON-RPC id as stored text, scoped to its caller: 7 and "7" stay different, so do two clients' 7s."""
    key = json.dumps(request_id)
    return f"{caller} {key}" if caller else key


class RunningCalls:
    """Contexts of calls in flight in this process, for `notifications/cancelled`.

    Keyed by endpoint and caller-scoped request id (see the module docstring).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str], list[ToolContext]] = {}

    @staticmethod
    def _key(endpoint: str, request_id: Any, caller: str = "") -> tuple[str, str]:
        return endpoint, request_id_key(request_id, caller)

    def add(self, ctx: ToolContext) -> None:
        with self._lock:
            self._calls.setdefault(self._key(ctx.endpoint, ctx.request_id, ctx.caller), []).append(ctx)
        ensure_watcher()  # cancellations recorded by other replicas reach this call too

    def snapshot(self) -> list[tuple[str, str, ToolContext]]:
        """(endpoint, request id as JSON, context) of every call in flight."""
        with self._lock:
            return [(endpoint, rid, ctx) for (endpoint, rid), contexts in self._calls.items() for ctx in contexts]

    def remove(self, ctx: ToolContext) -> None:
        key = self._key(ctx.endpoint, ctx.request_id, ctx.caller)
        with self._lock:
            contexts = self._calls.get(key, [])
            if ctx in contexts:
                contexts.remove(ctx)
            if not contexts:
                self._calls.pop(key, None)

    def cancel(self, endpoint: str, request_id: Any, caller: str = "") -> int:
        with self._lock:
            contexts = list(self._calls.get(self._key(endpoint, request_id, caller), []))
        for ctx in contexts:
            ctx.cancelled.set()
        return len(contexts)


RUNNING = RunningCalls()


def ensure_watcher() -> None:
    """Start the process's watcher thread if it is not running."""
    global _thread
    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        _thread = threading.Thread(target=_watch, name="mcp-cancellation-watcher", daemon=True)
        _thread.start()


def check_once() -> int:
    """Apply recorded cancellations to the calls in flight; returns how many were cancelled."""
    calls = RUNNING.snapshot()
    if not calls:
        return 0
    since = datetime.fromtimestamp(min(ctx.started_at for _, _, ctx in calls), tz=UTC)
    records = McpCancellation.objects.filter(
        created_at__gte=since,
        endpoint__in={endpoint for endpoint, _, _ in calls},
        request_id__in={request_id for _, request_id, _ in calls},
    ).values_list("endpoint", "request_id", "created_at")
    latest: dict[tuple[str, str], float] = {}
    for endpoint, request_id, created_at in records:
        key = (endpoint, request_id)
        latest[key] = max(latest.get(key, 0.0), created_at.timestamp())
    cancelled = 0
    for endpoint, request_id, ctx in calls:
        recorded = latest.get((endpoint, request_id))
        if recorded is not None and recorded >= ctx.started_at and not ctx.cancelled.is_set():
            ctx.cancelled.set()
            cancelled += 1
    return cancelled


def _watch() -> None:
    idle_polls = 0
    while True:
        time.sleep(POLL_SECONDS)
        try:
            if RUNNING.snapshot():
                idle_polls = 0
                check_once()
            else:
                idle_polls += 1
        except Exception:  # the watcher must outlive a database hiccup
            logger.exception("could not read MCP cancellations")
        finally:
            # One short query a second: do not hold a connection between polls.
            connection.close()
        if idle_polls > 60:
            with _lock:
                global _thread
                if not RUNNING.snapshot():
                    _thread = None
                    return
