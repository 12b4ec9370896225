"""REST endpoints of the brain (same token as /mcp/brain, same actions and search).

POST /query          {"query", "limit"?, "wing"?, "hall"?, "status"?}
POST /write          {"title", "body", "frontmatter"?, "slug"?, "session_id"?}   → raw
POST /ingest         {"title", "body", "wing"?, "hall"?, "frontmatter"?, "slug"?, "raw"?}
GET  /notes/<slug>
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from brain.actions import do_ingest_note_from, do_write_raw_note_from
from brain.inputs import QueryInput, RawNoteInput, WikiNoteInput, given, rest_field, serializer_for
from brain.models import Note
from brain.presenters import note_detail, note_ref, query_result
from brain.tools import run_query
from hyperguild.api import EndpointTokenAPIView

if TYPE_CHECKING:
    pass

REST_SOURCE = "rest"


class BrainAPIView(EndpointTokenAPIView):
    """Authenticated with the /mcp/brain bearer token; errors in the shape of `hyperguild.api`.

    The actions and search raise BrainError subclasses (BrainInputError, SearchInputError…) with the
    message MCP callers see too; the exception handler answers them as 400s.
    """

    token_endpoint = "brain"

    def validated(self, serializer_class: type[serializers.Serializer]) -> Mapping[str, Any]:
        """The request body checked by `serializer_class` (a 400 naming each bad field otherwise)."""
        serializer = serializer_class(data=self.request.data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


# The bodies are the MCP tools' input models (brain.inputs), as DRF serializers (DRF's error messages):
# POST /query takes what brain_query takes; POST /write what brain_write takes; POST /ingest that and a
# place, or raw: true.
QuerySerializer = serializer_for(QueryInput)
NoteInputSerializer = serializer_for(RawNoteInput)


class IngestSerializer(NoteInputSerializer):  # type: ignore[misc,valid-type]  # a class made by serializer_for
    wing = rest_field(WikiNoteInput, "wing", required=False)  # blank with raw: true
    hall = rest_field(WikiNoteInput, "hall", required=False)
    raw = serializers.BooleanField(default=False, help_text="true: into raw for review instead of the wiki")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("raw") and not attrs.get("wing"):
            raise serializers.ValidationError({"wing": "wing is required to ingest into the wiki (or send raw: true)."})
        return attrs


class QueryView(BrainAPIView):
    token_scope = "brain:read"

    def post(self, request: Request) -> Response:
        arguments = given(QueryInput, self.validated(QuerySerializer))
        return Response(query_result(run_query(arguments)).model_dump(mode="json"))


class WriteView(BrainAPIView):
    token_scope = "brain:write"

    def post(self, request: Request) -> Response:
        arguments = given(RawNoteInput, self.validated(NoteInputSerializer))
        note = do_write_raw_note_from(arguments, source=REST_SOURCE, user=request.user.user)
        return Response(note_ref(note).model_dump(mode="json"), status=status.HTTP_201_CREATED)


class IngestView(BrainAPIView):
    token_scope = "brain:write"

    def post(self, request: Request) -> Response:
        data = self.validated(IngestSerializer)
        # Into raw: any writer; straight into the wiki skips review, so it is a reviewer's (as brain_ingest).
        self.require_right("brain:write" if data["raw"] else "brain:review")
        if data["raw"]:
            note = do_write_raw_note_from(
                given(RawNoteInput, data), source=REST_SOURCE, user=request.user.user, ingest=True
            )
        else:
            note = do_ingest_note_from(given(WikiNoteInput, data), source=REST_SOURCE, user=request.user.user)
        return Response(note_ref(note).model_dump(mode="json"), status=status.HTTP_201_CREATED)


class NoteView(BrainAPIView):
    token_scope = "brain:read"

    def get(self, request: Request, slug: str) -> Response:
        note = Note.objects.filter(slug=slug).first()
        if note is None:
            raise NotFound(f"No note with slug {slug!r}; find slugs with POST /query.")
        return Response(note_detail(note).model_dump(mode="json"))
