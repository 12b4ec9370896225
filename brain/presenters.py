"""Notes as plain dicts, the same for MCP tools, resources and REST."""

from __future__ import annotations

from urllib.parse import quote

from django.urls import reverse

from brain.models import Note, NoteLink
from brain.placement import resolve_targets
from brain.slugs import slugify_path
from brain.truth import VERIFICATION_SCHEMA, verification_dict
from hyperguild.lib.markdown import extract_wikilinks, render_markdown
from hyperguild.lib.schema import STRING, closed_object

NOTE_URI_PREFIX = "brain://note/"


def note_uri(note: Note) -> str:
    return f"{NOTE_URI_PREFIX}{note.slug}"


def note_ref(note: Note) -> dict:
    """What a write returns: enough to find the note again."""
    return {
        "note_id": note.id,
        "slug": note.slug,
        "title": note.title,
        "status": note.status,
        "wing": note.wing,
        "hall": note.hall,
        "path": note.path,
        "uri": note_uri(note),
        # Who wrote it (a username; null: the service identity or an import).
        "author": note.created_by.get_username() if note.created_by_id else None,
        "version": note.version,
        # What the note door took out (brain.actions._redact_note_fields): pattern names and counts, never the secret.
        "redactions": note.redactions,
    }


def note_detail(note: Note) -> dict:
    """The whole note with its links out (resolved or not, and ambiguous ones) and in."""
    outgoing = list(note.links_out.select_related("target").order_by("target_slug", "kind"))
    # A bare name that several notes answer equally well is shown with all of them (brain.placement).
    resolutions = resolve_targets([link.target_slug for link in outgoing], wing=note.wing, hall=note.hall,
                                  exclude_id=note.id)
    links_out = [
        {
            "target_slug": link.target_slug,
            "kind": link.kind,
            "resolved": link.target_id is not None,
            "target_title": link.target.title if link.target_id else None,
            "resolved_slug": link.target.slug if link.target_id else None,
            "ambiguous": list(resolutions[link.target_slug].ambiguous),
        }
        for link in outgoing
    ]
    links_in = [
        {"source_slug": link.source.slug, "source_title": link.source.title, "kind": link.kind, "resolved": True}
        for link in NoteLink.objects.filter(target=note).select_related("source").order_by("source__slug", "kind")
    ]
    return {
        **note_ref(note),
        "body": note.body,
        "frontmatter": note.frontmatter,
        "source": note.source,
        # Who last reviewed it (a username, or null).
        "reviewed_by": note.reviewed_by.get_username() if note.reviewed_by_id else None,
        "session_id": note.session_id,
        "content_hash": note.content_hash,
        "review_note": note.review_note,
        "created_at": note.created_at.isoformat(),
        "updated_at": note.updated_at.isoformat(),
        "links_out": links_out,
        "links_in": links_in,
        "project": note.project.name if note.project_id else None,
        "verification": verification_dict(note),
        **supersession(note),
    }


def supersession(note: Note) -> dict:
    """`superseded_by` (slug or null), `superseded` (the sentence brain_get says) and `supersedes` (slugs)."""
    successor = note.superseded_by
    sentence = None
    if successor is not None:
        who = note.superseded_by_person.get_username() if note.superseded_by_person_id else "the service"
        when = note.superseded_at.date().isoformat() if note.superseded_at else "an unknown date"
        sentence = f"superseded by {successor.slug} on {when} by {who}: {note.superseded_reason}"
    return {
        "superseded_by": successor.slug if successor is not None else None,
        "superseded": sentence,
        "supersedes": list(note.supersedes.order_by("slug").values_list("slug", flat=True)),
    }


NOTE_REF_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "note_id": {"type": "integer"}, "slug": STRING, "title": STRING,
        "status": {"type": "string", "enum": ["raw", "wiki", "rejected", "archived"]},
        "wing": STRING, "hall": STRING, "path": STRING, "uri": STRING,
        "author": {"type": ["string", "null"], "description": "username of the person who wrote the note"},
        "version": {"type": "integer", "description": "goes up on every change; brain_edit and brain_archive take it"},
        "redactions": {
            "type": "array",
            "description": "secrets taken out before the note was stored: [{field, pattern, count}]",
            "items": {
                "type": "object",
                "properties": {"field": STRING, "pattern": STRING, "count": {"type": "integer"}},
            },
        },
    },
    "required": ["note_id", "slug", "title", "status", "wing", "hall", "path", "uri"],
}  # fmt: skip

LINK_KIND = {"type": "string", "enum": ["wikilink", "related", "links"]}
NOTE_DETAIL_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **NOTE_REF_SCHEMA["properties"],
        "body": STRING, "frontmatter": {"type": "object"}, "source": STRING,
        "reviewed_by": {"type": ["string", "null"], "description": "username of the person who last reviewed it"},
        "session_id": STRING, "content_hash": STRING, "review_note": STRING, "created_at": STRING, "updated_at": STRING,
        "links_out": {
            "type": "array",
            "items": closed_object(
                {
                    "target_slug": STRING, "kind": LINK_KIND, "resolved": {"type": "boolean"},
                    "target_title": {"type": ["string", "null"]}, "resolved_slug": {"type": ["string", "null"]},
                    "ambiguous": {"type": "array", "items": STRING},
                },
                required=["target_slug", "kind", "resolved", "target_title"],
            ),
        },
        "links_in": {
            "type": "array",
            "items": closed_object(
                {"source_slug": STRING, "source_title": STRING, "kind": LINK_KIND, "resolved": {"type": "boolean"}}
            ),
        },
        "project": {"type": ["string", "null"], "description": "the project whose code the note describes"},
        "verification": VERIFICATION_SCHEMA,
        "superseded_by": {"type": ["string", "null"], "description": "the slug of the note that replaces this one"},
        "superseded": {
            "type": ["string", "null"],
            "description": "'superseded by X on <date> by <person>: <reason>' (null: current)",
        },
        "supersedes": {"type": "array", "items": STRING, "description": "notes this one replaces"},
    },
    "required": [
        *NOTE_REF_SCHEMA["required"], "body", "frontmatter", "source", "session_id", "content_hash",
        "review_note", "created_at", "updated_at", "links_out", "links_in",
    ],
}  # fmt: skip

UNREVIEWED_MATCHES_SCHEMA = {
    "type": "integer",
    "description": "raw notes (not reviewed yet, so not searched by default) that match too",
}
UNREVIEWED_HINT_SCHEMA = {"type": ["string", "null"], "description": "how to see the unreviewed matches"}
UNREVIEWED_LIST_SCHEMA = {
    "type": "array",
    "description": "the best unreviewed matches, by slug (read one with brain_get)",
    "items": closed_object({"slug": STRING, "title": STRING, "status": STRING}),
}

HIT_SCHEMA = closed_object({
    "note_id": {"type": "integer"}, "slug": STRING, "title": STRING, "path": STRING, "wing": STRING, "hall": STRING,
    "status": STRING, "score": {"type": "number"}, "excerpt": STRING,
    "rankers": {"type": "object", "additionalProperties": {"type": "integer"}},
    "verification": VERIFICATION_SCHEMA,
    "superseded_by": {"type": ["string", "null"], "description": "the slug of the note that replaces this one"},
})

QUERY_RESULT_SCHEMA = closed_object(
    {
        "hits": {"type": "array", "items": HIT_SCHEMA},
        "count": {"type": "integer"},
        "abstained": {
            "type": "boolean",
            "description": "true when no note passed the relevance floors: nothing relevant is the answer",
        },
        "partial": {
            "type": "boolean",
            "description": "true while notes are still waiting for embeddings (vector search covers part of them)",
        },
        "degraded": {"type": "boolean", "description": "true when only BM25 answered (the vector side failed)"},
        "reason": {"type": ["string", "null"], "description": "why there are no hits, or why only BM25 answered"},
        "unreviewed_matches": UNREVIEWED_MATCHES_SCHEMA,
        "unreviewed": UNREVIEWED_LIST_SCHEMA,
        "unreviewed_hint": UNREVIEWED_HINT_SCHEMA,
    },
)


def hit_dict(hit) -> dict:
    if hasattr(hit, "as_dict"):
        return hit.as_dict()
    return {key: getattr(hit, key) for key in HIT_SCHEMA["required"]}


def query_result(response) -> dict:
    hits = [hit_dict(hit) for hit in response.hits]
    return {
        "hits": hits,
        "count": len(hits),
        "abstained": bool(getattr(response, "abstained", False)),
        "partial": bool(getattr(response, "partial", False)),
        "degraded": bool(response.degraded),
        "reason": response.reason,
        "unreviewed_matches": getattr(response, "unreviewed_matches", 0),
        "unreviewed": list(getattr(response, "unreviewed", [])),
        "unreviewed_hint": getattr(response, "unreviewed_hint", None),
    }


def render_note_body(body: str) -> str:
    """A note's markdown as safe HTML, `[[wikilinks]]` linked to the notes they name (one query).

    A link whose target does not exist yet is marked `missing` and points at a search for it.
    """
    slugs = {slugify_path(link.target) for link in extract_wikilinks(body)}
    known = dict(
        Note.objects.filter(slug__in=slugs).exclude(status="archived").values_list("slug", "pk")
    ) if slugs else {}

    def resolve(target: str) -> tuple[str, bool]:
        pk = known.get(slugify_path(target))
        if pk is not None:
            return reverse("brain-note", args=[pk]), True
        return f"{reverse('brain-search')}?q={quote(target)}&status=any", False

    return render_markdown(body, wikilink=resolve)
