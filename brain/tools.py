"""MCP tools of the brain endpoint (registered on import, from AppConfig.ready).

brain_query / brain_get read; brain_write / brain_ingest / brain_ingest_raw
write through `brain.actions` (not idempotent: each call makes a new note,
never destructive). Wiki notes are also resources: `brain://note/<slug>`.
"""

from __future__ import annotations

from dataclasses import replace

from brain import inputs
from brain.actions import do_ingest_note, do_ingest_raw_note, do_write_raw_note
from brain.errors import BrainError
from brain.folder import note_file_text
from brain.limits import MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT, MAX_TAGS
from brain.models import Note, NoteStatus
from brain.presenters import (
    NOTE_DETAIL_SCHEMA,
    NOTE_REF_SCHEMA,
    NOTE_URI_PREFIX,
    QUERY_RESULT_SCHEMA,
    note_detail,
    note_ref,
    note_uri,
    query_result,
)
from brain.search import search
from hyperguild.lib.schema import closed_object
from hyperguild.mcp.registry import Endpoint, Handler, ToolContext, ToolError, register_endpoint
from hyperguild.permissions import register_right
from hyperguild.roles import CURATOR, REVIEWER

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
# What each scope and role allows on this endpoint and the brain's REST routes (hyperguild.permissions; docs/people.md).
register_right("brain:read", scope="brain:read",
               description="search and read notes: tools, resources, prompts, completion, POST /query, GET /notes")
register_right("brain:write", scope="brain:write", permission="brain.add_note", roles=(REVIEWER, CURATOR),
               description="write new raw notes for review: brain_write, brain_ingest_raw, POST /write, POST /ingest raw")
register_right("brain:review", scope="brain:write", permission="brain.review_note", roles=(REVIEWER,),
               description="change the wiki: brain_ingest, brain_edit, brain_archive, brain_undo, brain_verify, "
               "brain_supersede, POST /ingest into the wiki")  # fmt: skip
brain.translate_errors(BrainError)  # BrainInputError, SearchInputError, SlugError… reach the caller as tool errors

STATUSES = [*NoteStatus.values, "any"]


def _write_tool(action, write: inputs.NoteInput, *, name: str, title: str, description: str,
                right: str = "brain:write") -> Handler:
    """Declare a tool that writes one new note with `action`: its input schema is `write`'s (from brain.inputs,
    where REST and the forms take theirs too), it answers the note's reference and needs the brain:write scope."""

    def handler(arguments: dict, ctx: ToolContext) -> dict:
        # The registry validated the arguments against `write`'s schema.
        return note_ref(action(**write.arguments(arguments), source="mcp", user=ctx.actor))

    handler.__name__ = name
    brain.tool(
        name=name, title=title, description=description, input_schema=write.json_schema(),
        output_schema=NOTE_REF_SCHEMA, scope="brain:write", right=right,
    )(handler)  # fmt: skip
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
    input_schema=closed_object(
        {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_LENGTH, "description": "words to search for"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": 10},
            "wing": inputs.SEGMENT.json_schema(),
            "hall": inputs.SEGMENT.json_schema(),
            "status": {"type": "string", "enum": STATUSES, "default": "wiki"},
            "include_raw": {
                "type": "boolean",
                "default": False,
                "description": "with status wiki: also unreviewed raw notes (notes just written), each hit with its status",
            },
            "tags": {
                "type": "array",
                "items": inputs.TAG.json_schema(),
                "maxItems": MAX_TAGS,
                "description": "only notes whose frontmatter `tags` holds every one of these",
            },
        },
        required=["query"],
    ),
    output_schema=QUERY_RESULT_SCHEMA,
    read_only=True,
    idempotent=True,
)
def brain_query(arguments: dict, ctx: ToolContext) -> dict:
    response = search(
        arguments["query"],
        limit=arguments.get("limit", 10),
        wing=arguments.get("wing") or None,
        hall=arguments.get("hall") or None,
        status=arguments.get("status", "wiki"),
        include_raw=arguments.get("include_raw", False),
        tags=arguments.get("tags"),
    )
    return query_result(response)


@brain.tool(
    name="brain_get",
    title="Read a note",
    description="The whole note for a slug: body, frontmatter, status, place, and its links out (resolved or not) and in.",
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {"slug": replace(inputs.SLUG, description="the note's slug, as brain_query returns it").json_schema()},
        "required": ["slug"],
    },
    output_schema=NOTE_DETAIL_SCHEMA,
    read_only=True,
    idempotent=True,
)
def brain_get(arguments: dict, ctx: ToolContext) -> dict:
    note = Note.objects.filter(slug=arguments["slug"]).first()
    if note is None:
        raise ToolError(f"No note with slug {arguments['slug']!r}; find slugs with brain_query.")
    return note_detail(note)


brain_write = _write_tool(
    do_write_raw_note,
    inputs.RAW_NOTE,
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
    do_ingest_note,
    inputs.WIKI_NOTE,
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
    do_ingest_raw_note,
    inputs.RAW_NOTE,
    name="brain_ingest_raw",
    title="Ingest a document into raw",
    description="Put a document into raw for a person to review and promote into the wiki. Not idempotent.",
)


class WikiNoteResources:
    """Wiki notes as MCP resources, `brain://note/<slug>`, as markdown with frontmatter."""

    MIME_TYPE = "text/markdown"

    def list_resources(self, offset: int, limit: int) -> tuple[list[dict], bool]:
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

    def read_resource(self, uri: str) -> list[dict] | None:
        if not uri.startswith(NOTE_URI_PREFIX):
            return None
        note = Note.objects.wiki().filter(slug=uri[len(NOTE_URI_PREFIX) :]).first()
        if note is None:
            return None
        return [{"uri": uri, "mimeType": self.MIME_TYPE, "text": note_file_text(note)}]

    def resource_templates(self) -> list[dict]:
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
