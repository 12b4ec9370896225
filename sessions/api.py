"""REST: `POST /sessions/<id>/entries` (same contract as the session_log tool), a read-back,
and `POST /api/hooks/<event>` for the Claude Code plugin's hooks (sessions.hooks)."""

from __future__ import annotations

from rest_framework import status as http_status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from hyperguild.api import EndpointTokenAPIView
from hyperguild.lib.limits import InputRejected, loads_limited
from sessions.actions import check_session_id, do_log_checked_entry
from sessions.hooks import HookRefused, handle_hook
from sessions.models import AgentSession

MAX_PAGE = 500


class BrainTokenView(EndpointTokenAPIView):
    """Authenticated with the brain endpoint's bearer token, like /mcp/brain."""

    token_endpoint = "brain"


class SessionEntriesView(BrainTokenView):
    def required_scope(self, request) -> str:
        return "sessions:write" if request.method == "POST" else "brain:read"

    def post(self, request, session_id: str):
        # The same validation as session_log on MCP (sessions.actions' limit table); EntryRefused → 400.
        result = do_log_checked_entry(session_id, request.data, source="rest", user=request.user.user)
        code = http_status.HTTP_201_CREATED if result["created"] else http_status.HTTP_200_OK
        return Response(result, status=code)

    def get(self, request, session_id: str):
        check_session_id(session_id)
        session = AgentSession.objects.filter(external_id=session_id).first()
        if session is None:
            raise NotFound(f"No session {session_id!r}; log an entry to create it.")
        try:
            after = max(0, int(request.query_params.get("after", 0)))
            limit = min(MAX_PAGE, max(1, int(request.query_params.get("limit", 100))))
        except ValueError:
            raise ValidationError({"after": "after and limit must be integers."})
        entries = list(session.entries.filter(seq__gt=after).order_by("seq")[: limit + 1])
        return Response(
            {
                "session_id": session.external_id,
                "project": session.project.name if session.project_id else "",
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

    def post(self, request, event: str):
        try:
            payload = loads_limited(request.body)
        except InputRejected as exc:
            raise HookRefused(exc.message) from None
        identity = request.user
        return Response(handle_hook(event, payload, user=identity.user, may_read_brain=identity.allows("brain:read")).answer)
