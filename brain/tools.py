"""MCP tools of the brain endpoint (registered on import, from AppConfig.ready).

brain_query / brain_get read; brain_write / brain_ingest / brain_ingest_raw
write through `brain.actions` (not idempotent: each call makes a new note,
never destructive). Wiki notes are also resources: `brain://note/<slug>`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import Field

from brain.actions import do_ingest_note_from, do_write_raw_note_from
from brain.errors import BrainError
from brain.folder import note_file_text
from brain.inputs import QueryInput, RawNoteInput, Slug, WikiNoteInput
from brain.models import Note
from brain.presenters import (
    NOTE_URI_PREFIX,
    NoteDetail,
    NoteRef,
    QueryResult,
    note_detail,
    note_ref,
    note_uri,
    query_result,
)
from brain.search import SearchResponse, search
from hyperguild.lib.typed import JSON
from hyperguild.mcp.contracts import ToolInput
from hyperguild.mcp.registry import Endpoint, ToolContext, ToolError, register_endpoint
from people.permissions import register_right
from people.roles import CURATOR, MEMBER, REVIEWER

brain = register_endpoint(
    Endpoint(
        "brain",
        title="hyperguild brain",
        token_setting="BRAIN_MCP_TOKEN",
        # Reading is the default scope of its tools; writing notes and logging sessions are asked for apart.
        scopes=("brain:read", "brain:write", "sessions:write", "sessions:read"),
        instructions=(
            "The team's knowledge base. Search it before you work (brain_query, brain_context), "
            "read notes (brain_get), record what you learn (brain_write) and log the session (session_log)."
        ),
    )
)
# What each scope and role allows on this endpoint and the brain's REST routes (people.permissions; docs/people.md).
register_right(
    "brain:read",
    scope="brain:read",
    description="search and read notes: tools, resources, prompts, completion, POST /query, GET /notes",
)
register_right(
    "brain:write",
    scope="brain:write",
    permission="brain.add_note",
    roles=(MEMBER, REVIEWER, CURATOR),
    description="write new raw notes for review: brain_write, brain_ingest_raw, POST /write, POST /ingest raw",
)
register_right(
    "brain:review",
    scope="brain:write",
    permission="brain.review_note",
    roles=(REVIEWER,),
    description="change the wiki: brain_ingest, brain_edit, brain_archive, brain_undo, brain_verify, "
    "brain_supersede, POST /ingest into the wiki",
)
brain.translate_errors(BrainError)  # BrainInputError, SearchInputError, SlugError… reach the caller as tool errors

WriteInput = TypeVar("WriteInput", RawNoteInput, WikiNoteInput)


def _write_tool(
    action: Callable[[WriteInput, Any], Note],
    write: type[WriteInput],
    *,
    name: str,
    title: str,
    description: str,
    right: str = "brain:write",
) -> Callable[[WriteInput, ToolContext], NoteRef]:
    """Declare a tool that writes one new note with `action(input, user)`: its input model is `write` (from
    brain.inputs, where REST and the forms take theirs too), it answers the note's reference and needs the
    brain:write scope."""

    def handler(arguments: WriteInput, ctx: ToolContext) -> NoteRef:
        return note_ref(action(arguments, ctx.actor))

    handler.__name__ = name
    brain.tool(
        name=name,
        title=title,
        description=description,
        input_model=write,
        result_model=NoteRef,
        scope="brain:write",
        right=right,
    )(handler)
    return handler


@brain.tool(
    name="brain_query",
    title="Search the brain",
    description=(
        "Search the team's notes (BM25 over title and body, fused with vector search when an embedder is on). "
        "Returns the best notes with an excerpt. Filter by wing/hall (the first two folders under wiki/) and "
        "status (default wiki; 'any' means every status but archived). Only reviewed (wiki) notes are searched "
        "by default: `unreviewed_matches` says how many raw notes, not reviewed yet, match too, and "
        "include_raw=true ranks them with the wiki notes (each hit shows its status). Read a note with brain_get."
    ),
    input_model=QueryInput,
    result_model=QueryResult,
    read_only=True,
    idempotent=True,
)
def brain_query(arguments: QueryInput, ctx: ToolContext) -> QueryResult:
    return query_result(run_query(arguments))


def run_query(arguments: QueryInput) -> SearchResponse:
    """The search brain_query and POST /query run."""
    return search(
        arguments.query,
        limit=arguments.limit,
        wing=arguments.wing or None,
        hall=arguments.hall or None,
        status=arguments.status,
        include_raw=arguments.include_raw,
        tags=arguments.tags,
        include_superseded=arguments.include_superseded,
    )


class GetInput(ToolInput):
    slug: Annotated[Slug, Field(description="the note's slug, as brain_query returns it")]


@brain.tool(
    name="brain_get",
    title="Read a note",
    description=(
        "The whole note for a slug: body, frontmatter, status, place, its links out (resolved or not) and in, "
        "its `verification` against its project's code (verified at a commit, stale with the evidence, or "
        "unverified and why) and, when a newer note replaced it, `superseded` (by which note, when, who, why)."
    ),
    input_model=GetInput,
    result_model=NoteDetail,
    read_only=True,
    idempotent=True,
)
def brain_get(arguments: GetInput, ctx: ToolContext) -> NoteDetail:
    note = Note.objects.filter(slug=arguments.slug).first()
    if note is None:
        raise ToolError(f"No note with slug {arguments.slug!r}; find slugs with brain_query.")
    return note_detail(note)


brain_write = _write_tool(
    lambda note, user: do_write_raw_note_from(note, source="mcp", user=user),
    RawNoteInput,
    name="brain_write",
    title="Write a note into raw",
    description=(
        "Record something worth remembering as a new note in raw, where a person reviews it before it enters "
        "the wiki. Same title twice gives two notes (the slug is numbered). Secrets (API keys, tokens, private "
        "keys) are replaced by [REDACTED:<kind>] before anything is stored; `redactions` lists what was removed. "
        "Not idempotent."
    ),
)
brain_ingest = _write_tool(
    lambda note, user: do_ingest_note_from(note, source="mcp", user=user),
    WikiNoteInput,
    name="brain_ingest",
    title="Ingest a document into the wiki",
    description=(
        "Put a document straight into the wiki under wing/hall (e.g. wing 'sources', hall 'papers'). "
        "For trusted sources only; anything that needs review goes through brain_ingest_raw. Needs a reviewer's "
        "role (it skips review). Not idempotent."
    ),
    right="brain:review",
)
brain_ingest_raw = _write_tool(
    lambda note, user: do_write_raw_note_from(note, source="mcp", user=user, ingest=True),
    RawNoteInput,
    name="brain_ingest_raw",
    title="Ingest a document into raw",
    description="Put a document into raw for a person to review and promote into the wiki. Not idempotent.",
)


class WikiNoteResources:
    """Wiki notes as MCP resources, `brain://note/<slug>`, as markdown with frontmatter."""

    MIME_TYPE = "text/markdown"

    def list_resources(self, offset: int, limit: int) -> tuple[list[JSON], bool]:
        notes = list(Note.objects.wiki().order_by("slug")[offset : offset + limit + 1])
        items = [
            {
                "uri": note_uri(note),
                "name": note.slug,
                "title": note.title,
                "description": "/".join(part for part in (note.wing, note.hall) if part) or "wiki",
                "mimeType": self.MIME_TYPE,
            }
            for note in notes[:limit]
        ]
        return items, len(notes) > limit

    def read_resource(self, uri: str) -> list[JSON] | None:
        if not uri.startswith(NOTE_URI_PREFIX):
            return None
        note = Note.objects.wiki().filter(slug=uri[len(NOTE_URI_PREFIX) :]).first()
        if note is None:
            return None
        return [{"uri": uri, "mimeType": self.MIME_TYPE, "text": note_file_text(note)}]

    def resource_templates(self) -> list[JSON]:
        return [
            {
                "uriTemplate": f"{NOTE_URI_PREFIX}{{slug}}",
                "name": "wiki-note",
                "title": "A wiki note",
                "description": "A wiki note by slug, as markdown with YAML frontmatter.",
                "mimeType": self.MIME_TYPE,
            }
        ]


brain.resources = WikiNoteResources()
