"""REST endpoints of the brain (same token as /mcp/brain, same actions and search).

    POST /query          {"query", "limit"?, "wing"?, "hall"?, "status"?}
    POST /write          {"title", "body", "frontmatter"?, "slug"?, "session_id"?}   → raw
    POST /ingest         {"title", "body", "wing"?, "hall"?, "frontmatter"?, "slug"?, "raw"?}
    GET  /notes/<slug>
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from brain import inputs
from brain.actions import do_ingest_note, do_ingest_raw_note, do_write_raw_note
from brain.limits import MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT, MAX_TAGS
from brain.models import Note, NoteStatus
from brain.presenters import note_detail, note_ref, query_result
from brain.search import search
from hyperguild.api import EndpointTokenAPIView

if TYPE_CHECKING:
    from brain.types import JSONObject

REST_SOURCE = "rest"


class BrainAPIView(EndpointTokenAPIView):
    """Authenticated with the /mcp/brain bearer token; errors in the shape of `hyperguild.api`.

    The actions and search raise BrainError subclasses (BrainInputError, SearchInputError…) with the
    message MCP callers see too; the exception handler answers them as 400s.
    """

    token_endpoint = "brain"

    def validated(self, serializer_class: type[serializers.Serializer]) -> dict:
        """The request body checked by `serializer_class` (a 400 naming each bad field otherwise)."""
        serializer = serializer_class(data=self.request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


class QuerySerializer(serializers.Serializer):
    query = serializers.CharField(max_length=MAX_QUERY_LENGTH, trim_whitespace=True)
    limit = serializers.IntegerField(min_value=1, max_value=MAX_SEARCH_LIMIT, default=10)
    wing = inputs.SEGMENT.serializer_field(required=False)
    hall = inputs.SEGMENT.serializer_field(required=False)
    status = serializers.ChoiceField(choices=[*NoteStatus.values, "any"], default=NoteStatus.WIKI)
    include_raw = serializers.BooleanField(default=False, help_text="with status wiki: unreviewed raw notes too")
    include_superseded = serializers.BooleanField(default=False, help_text="also notes a newer note superseded")
    tags = serializers.ListField(
        child=inputs.TAG.serializer_field(required=True), required=False, max_length=MAX_TAGS,
        help_text="only notes whose frontmatter tags hold every one of these",
    )  # fmt: skip


# POST /write takes what brain_write takes (brain.inputs.RAW_NOTE); POST /ingest that and a place, or raw: true.
NoteInputSerializer = inputs.RAW_NOTE.serializer("NoteInputSerializer")


class IngestSerializer(NoteInputSerializer):  # type: ignore[valid-type,misc]  # a class brain.inputs builds at import
    wing = inputs.SEGMENT.serializer_field(required=False)  # blank with raw: true
    hall = inputs.SEGMENT.serializer_field(required=False)
    raw = serializers.BooleanField(default=False, help_text="true: into raw for review instead of the wiki")

    def validate(self, attrs: JSONObject) -> JSONObject:
        if not attrs.get("raw") and not attrs.get("wing"):
            raise serializers.ValidationError({"wing": "wing is required to ingest into the wiki (or send raw: true)."})
        return attrs


class QueryView(BrainAPIView):
    token_scope = "brain:read"

    def post(self, request: Request) -> Response:
        args = self.validated(QuerySerializer)
        response = search(
            args["query"], limit=args["limit"], wing=args.get("wing") or None,
            hall=args.get("hall") or None, status=args["status"], include_raw=args["include_raw"],
            tags=args.get("tags"), include_superseded=args["include_superseded"],
        )  # fmt: skip
        return Response(query_result(response))


class WriteView(BrainAPIView):
    token_scope = "brain:write"

    def post(self, request: Request) -> Response:
        args = self.validated(NoteInputSerializer)
        note = do_write_raw_note(**inputs.RAW_NOTE.arguments(args), source=REST_SOURCE, user=request.user.user)
        return Response(note_ref(note), status=status.HTTP_201_CREATED)


class IngestView(BrainAPIView):
    token_scope = "brain:write"

    def post(self, request: Request) -> Response:
        args = self.validated(IngestSerializer)
        # Into raw: any writer; straight into the wiki skips review, so it is a reviewer's (as brain_ingest).
        self.require_right("brain:write" if args["raw"] else "brain:review")
        action, write = (do_ingest_raw_note, inputs.RAW_NOTE) if args["raw"] else (do_ingest_note, inputs.WIKI_NOTE)
        note = action(**write.arguments(args), source=REST_SOURCE, user=request.user.user)
        return Response(note_ref(note), status=status.HTTP_201_CREATED)


class NoteView(BrainAPIView):
    token_scope = "brain:read"

    def get(self, request: Request, slug: str) -> Response:
        note = Note.objects.filter(slug=slug).first()
        if note is None:
            raise NotFound(f"No note with slug {slug!r}; find slugs with POST /query.")
        return Response(note_detail(note))
