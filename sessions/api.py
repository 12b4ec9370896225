"""REST: `POST /sessions/<id>/entries` (same contract as the session_log tool), a read-back,
`POST /api/hooks/<event>` for the Claude Code plugin's hooks and `POST /api/hooks/spool` for what its
spool kept while the service was away (sessions.hooks)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.conf import settings
from rest_framework import status as http_status
from rest_framework.exceptions import NotFound, PermissionDenied, Throttled, UnsupportedMediaType, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from hyperguild.api import EndpointTokenAPIView
from hyperguild.lib.batches import batch_budget, person_key
from hyperguild.lib.limits import InputRejected, loads_limited
from hyperguild.mcp.views import origin_allowed
from people.permissions import may
from sessions.actions import check_session_id, do_log_checked_entry, may_read_session
from sessions.edit_hook import handle_edit_hook
from sessions.hooks import HookRefused, check_spool_batch, handle_hook, replay_spool
from sessions.models import AgentSession

MAX_PAGE = 500


class BrainTokenView(EndpointTokenAPIView):
    """Authenticated with the brain endpoint's bearer token, like /mcp/brain."""

    token_endpoint = "brain"


class SessionEntriesView(BrainTokenView):
    def required_scope(self, request: Request) -> str:
        # Reading a session back is its owner's (or staff's), with a token that may read sessions.
        return "sessions:write" if request.method == "POST" else "sessions:read"

    def post(self, request: Request, session_id: str) -> Response:
        # The same validation as session_log on MCP (sessions.actions' limit table); EntryRefused → 400.
        result = do_log_checked_entry(session_id, request.data, source="rest", user=request.user.user)
        code = http_status.HTTP_201_CREATED if result["created"] else http_status.HTTP_200_OK
        return Response(result, status=code)

    def get(self, request: Request, session_id: str) -> Response:
        check_session_id(session_id)
        session = AgentSession.objects.filter(external_id=session_id).first()
        # Another person's session is answered as if it did not exist (only its owner and staff read it).
        if session is None or not may_read_session(session, request.user.user):
            raise NotFound(f"No session {session_id!r} of yours; log an entry to create it.")
        try:
            after = max(0, int(request.query_params.get("after", 0)))
            limit = min(MAX_PAGE, max(1, int(request.query_params.get("limit", 100))))
        except ValueError:
            raise ValidationError({"after": "after and limit must be integers."})
        entries = list(session.entries.filter(seq__gt=after).order_by("seq")[: limit + 1])
        return Response(
            {
                "session_id": session.external_id,
                "project": session.project.name if session.project else "",
                "last_seq": session.last_seq,
                "entries": [
                    {
                        "seq": e.seq,
                        "kind": e.kind,
                        "skill": e.skill,
                        "phase": e.phase,
                        "status": e.status,
                        "message": e.message,
                        "data": e.data,
                        "created_at": e.created_at.isoformat(),
                        # When it happened, for an entry that came late (a hook from the plugin's spool).
                        "occurred_at": e.occurred_at.isoformat() if e.occurred_at else None,
                    }
                    for e in entries[:limit]
                ],
                "more": len(entries) > limit,
            }
        )


class ClaudeHookView(BrainTokenView):
    """`POST /api/hooks/<event>`: a Claude Code hook's JSON as it is in, the hook's JSON answer out.

    The caller needs `sessions:write` (a personal token, an OAuth token or BRAIN_MCP_TOKEN, checked as
    /mcp/brain checks it); the SessionStart context also needs `brain:read`.
    """

    token_scope = "sessions:write"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # As /mcp/*: a browser page on another site must not reach this route. It takes JSON only, so a
        # cross-site "simple" request (text/plain, a form) is refused before anything is read or written.
        origin = request.META.get("HTTP_ORIGIN", "")
        if not origin_allowed(origin):
            raise PermissionDenied(
                f"Origin {origin} is not allowed; add it to HYPERGUILD_ALLOWED_ORIGINS if it should be."
            )
        media_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise UnsupportedMediaType(
                media_type or "none",
                detail=(
                    f"The hook route takes Content-Type: application/json only (got {media_type or 'none'!r}); "
                    "post the hook's JSON as the plugin's hook script does."
                ),
            )
        super().initial(request, *args, **kwargs)

    def post(self, request: Request, event: str) -> Response:
        try:
            payload = loads_limited(request.body)
        except InputRejected as exc:
            raise HookRefused(exc.message) from None
        identity = request.user
        return Response(
            handle_hook(event, payload, user=identity.user, may_read_brain=may(identity, "brain:read")).answer
        )


class ClaudeHookSpoolView(ClaudeHookView):
    """`POST /api/hooks/spool`: hooks the plugin could not deliver, oldest first (sessions.hooks.replay_spool).

    The same caller and scope as the hook route (it is that route, later); the answer counts what was
    logged, what was there already and what was refused, by index."""

    def post(self, request: Request) -> Response:  # type: ignore[override]  # this route has no event in its URL
        try:
            body = loads_limited(request.body)
        except InputRejected as exc:
            raise HookRefused(exc.message) from None
        batch = check_spool_batch(body)  # a body over the ceilings is a 400 and costs the person nothing
        user = request.user.user
        wait = batch_budget.take(person_key(user), batch.items)
        if wait:
            raise Throttled(
                wait,
                detail=(
                    f"This batch is {batch.items} items and your share of batch work this minute is spent "
                    f"(HYPERGUILD_BATCH_ITEMS_PER_MINUTE = {settings.HYPERGUILD_BATCH_ITEMS_PER_MINUTE}); "
                    "nothing was written. Send it again after Retry-After seconds."
                ),
            )
        return Response(asdict(replay_spool(batch, user=user)))


class ClaudeEditHookView(ClaudeHookView):
    """`POST /api/hooks/anchors`: the PostToolUse input of a file edit in, the notes it touched out (sessions.edit_hook).

    Reading the notes is all it needs (`brain:read`); the touch is logged in the session only for a caller that
    may also log sessions (`sessions:write`)."""

    token_scope = "brain:read"

    def post(self, request: Request) -> Response:  # type: ignore[override]  # this route has no event in its URL
        try:
            payload = loads_limited(request.body)
        except InputRejected as exc:
            raise HookRefused(exc.message) from None
        identity = request.user
        outcome = handle_edit_hook(payload, user=identity.user, may_log=may(identity, "sessions:write"))
        return Response(outcome.answer)
