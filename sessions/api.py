"""REST: `POST /sessions/<id>/entries` (same contract as the session_log tool) and a read-back."""

from __future__ import annotations

from jsonschema import Draft202012Validator
from rest_framework import status as http_status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from hyperguild.api import EndpointTokenAPIView
from hyperguild.lib.schema import error_message, error_path, schema_problems
from hyperguild.mcp.registry import ToolError
from sessions.models import AgentSession
from sessions.tools import SESSION_ID_PATTERN, SESSION_LOG_INPUT, log_entry_from_arguments

ENTRY_BODY_SCHEMA = {
    **SESSION_LOG_INPUT,
    "required": ["kind"],
    "properties": {k: v for k, v in SESSION_LOG_INPUT["properties"].items() if k != "session_id"},
}
ENTRY_BODY = Draft202012Validator(ENTRY_BODY_SCHEMA)
SESSION_ID = Draft202012Validator({"type": "string", "pattern": SESSION_ID_PATTERN})
MAX_PAGE = 500


class BrainTokenView(EndpointTokenAPIView):
    """Authenticated with the brain endpoint's bearer token, like /mcp/brain."""

    token_endpoint = "brain"

    @staticmethod
    def check_session_id(session_id: str) -> None:
        if not SESSION_ID.is_valid(session_id):
            raise ValidationError({"session_id": "Use letters, digits, '_', '.', '-' (at most 200 characters)."})


class SessionEntriesView(BrainTokenView):
    def post(self, request, session_id: str):
        self.check_session_id(session_id)
        body = request.data
        errors = schema_problems(ENTRY_BODY, body)
        if errors:
            raise ValidationError({error_path(e) or "body": error_message(e) for e in errors})
        try:
            result = log_entry_from_arguments({**body, "session_id": session_id}, source="rest")
        except ToolError as exc:
            raise ValidationError({"data": exc.message})
        code = http_status.HTTP_201_CREATED if result["created"] else http_status.HTTP_200_OK
        return Response(result, status=code)

    def get(self, request, session_id: str):
        self.check_session_id(session_id)
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
                "project": session.project,
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
