"""Notes as result models (hyperguild.mcp.contracts.ToolResult), the same for MCP tools and REST (dumped)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast, get_args
from urllib.parse import quote

from django.urls import reverse
from pydantic import ConfigDict, Field

from brain.models import Note, NoteLink
from brain.placement import resolve_targets
from brain.search import SearchResponse
from brain.slugs import slugify_path
from brain.truth import verification_dict
from hyperguild.lib.markdown import extract_wikilinks, render_markdown
from hyperguild.mcp.contracts import ToolResult

NOTE_URI_PREFIX = "brain://note/"


# -- the result models: what MCP tools and REST answer about notes ---------------------------------


UNRESOLVED_DESCRIPTION = (
    "what the note cites that is not in its project's code at the commit it was checked against "
    "('`send_invoce` is not in ledgerly at 1a2b3c4'): not checked, never stale — fix a typo, or leave a name that is "
    "not the project's (a standard-library call, a builtin)"
)


class Verification(ToolResult):
    state: Literal["proven", "verified", "stale", "unverified"]
    commit: str | None = Field(description="the branch head it was checked at")
    label: str = Field(
        description="'proven at 1a2b3c4 (check passed)', 'verified at 1a2b3c4 (anchors hold)', 'may be outdated: …' "
        "or why unverified; '' for a note that claims nothing about code (no project, or nothing it cites is in its "
        "project's code)"
    )
    reason: str | None = Field(description="why the note is unverified (null otherwise)")
    evidence: list[dict[str, Any]] = Field(
        description="for a stale note: each anchor that no longer holds, the commit that changed it; then each anchor "
        "that still holds but whose definition changed since the note's commit (state 'altered': changed, still present) "
        "and each that moved, with the commit"
    )
    unresolved: list[str] = Field(default_factory=list, description=UNRESOLVED_DESCRIPTION)


# brain.truth.verification_dict / verification_of, as a result field.
VerificationField = Annotated[
    Verification, Field(description="whether what the note cites in its project's code still holds (docs/truth.md)")
]


class Redaction(ToolResult):
    model_config = ConfigDict(extra="allow")
    field: str | None = None
    pattern: str | None = None
    count: int | None = None


class NoteRef(ToolResult):
    """What a write returns: enough to find the note again."""

    note_id: int
    slug: str
    title: str
    status: Literal["raw", "wiki", "rejected", "archived"]
    wing: str
    hall: str
    path: str
    uri: str
    author: str | None = Field(description="username of the person who wrote the note")
    version: int = Field(description="goes up on every change; brain_edit and brain_archive take it")
    redactions: list[Redaction] = Field(
        description="secrets taken out before the note was stored: [{field, pattern, count}]"
    )
    unresolved: list[str] = Field(default_factory=list, description=UNRESOLVED_DESCRIPTION)


class Supersession(ToolResult):
    superseded_by: str | None = Field(description="the slug of the note that replaces this one")
    superseded: str | None = Field(description="'superseded by X on <date> by <person>: <reason>' (null: current)")
    supersedes: list[str] = Field(description="notes this one replaces")


LinkKind = Literal["wikilink", "related", "links"]
assert set(get_args(LinkKind)) == set(NoteLink.Kind.values), "LinkKind must follow NoteLink.Kind"


class LinkOut(ToolResult):
    target_slug: str
    kind: LinkKind
    resolved: bool
    target_title: str | None
    resolved_slug: str | None
    ambiguous: list[str]


class LinkIn(ToolResult):
    source_slug: str
    source_title: str
    kind: LinkKind
    resolved: bool


class NoteDetail(Supersession, NoteRef):
    """The whole note with its links out (resolved or not, and ambiguous ones) and in."""

    body: str
    frontmatter: dict[str, Any]
    source: str
    reviewed_by: str | None = Field(description="username of the person who last reviewed it")
    session_id: str
    content_hash: str
    review_note: str
    created_at: str
    updated_at: str
    links_out: list[LinkOut]
    links_in: list[LinkIn]
    project: str | None = Field(description="the project whose code the note describes")
    verification: VerificationField


class UnreviewedNote(ToolResult):
    slug: str
    title: str
    status: str


UnreviewedMatches = Annotated[
    int, Field(description="raw notes (not reviewed yet, so not searched by default) that match too")
]
UnreviewedHint = Annotated[str | None, Field(description="how to see the unreviewed matches")]


class Unreviewed(ToolResult):
    """What a wiki-only search left out: raw notes that match too."""

    unreviewed_matches: UnreviewedMatches
    unreviewed: list[UnreviewedNote] = Field(
        description="the best unreviewed matches, by slug (read one with brain_get)"
    )
    unreviewed_hint: UnreviewedHint


class Hit(ToolResult):
    note_id: int
    slug: str
    title: str
    path: str
    wing: str
    hall: str
    status: str
    score: float
    excerpt: str
    rankers: dict[str, int]
    verification: VerificationField
    superseded_by: str | None = Field(description="the slug of the note that replaces this one")


class QueryResult(Unreviewed):
    hits: list[Hit]
    count: int
    abstained: bool = Field(description="true when no note passed the relevance floors: nothing relevant is the answer")
    partial: bool = Field(
        description="true while notes are still waiting for embeddings (vector search covers part of them)"
    )
    degraded: bool = Field(description="true when only BM25 answered (the vector side failed)")
    reason: str | None = Field(description="why there are no hits, or why only BM25 answered")


def note_uri(note: Note) -> str:
    return f"{NOTE_URI_PREFIX}{note.slug}"


def note_ref(note: Note) -> NoteRef:
    """What a write returns: enough to find the note again."""
    return NoteRef(**_ref_fields(note))


def _ref_fields(note: Note) -> dict[str, Any]:
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
        "author": note.created_by.get_username() if note.created_by_id and note.created_by else None,
        "version": note.version,
        # What the note door took out (brain.actions.notes._redact_note_fields): pattern names and counts, never the secret.
        "redactions": note.redactions,
        # What it cites that is not in its project's code, said to the writer at once (brain.truth).
        "unresolved": note.unresolved_anchors,
    }


def note_detail(note: Note) -> NoteDetail:
    """The whole note with its links out (resolved or not, and ambiguous ones) and in."""
    outgoing = list(note.links_out.select_related("target").order_by("target_slug", "kind"))
    # A bare name that several notes answer equally well is shown with all of them (brain.placement).
    resolutions = resolve_targets(
        [link.target_slug for link in outgoing], wing=note.wing, hall=note.hall, exclude_id=note.id
    )
    links_out = [
        LinkOut(
            target_slug=link.target_slug,
            kind=cast(LinkKind, link.kind),  # NoteLink.Kind's values
            resolved=link.target_id is not None,
            target_title=link.target.title if link.target_id and link.target else None,
            resolved_slug=link.target.slug if link.target_id and link.target else None,
            ambiguous=list(resolutions[link.target_slug].ambiguous),
        )
        for link in outgoing
    ]
    links_in = [
        LinkIn(
            source_slug=link.source.slug, source_title=link.source.title, kind=cast(LinkKind, link.kind), resolved=True
        )
        for link in NoteLink.objects.filter(target=note).select_related("source").order_by("source__slug", "kind")
    ]
    return NoteDetail(
        **_ref_fields(note),
        body=note.body,
        frontmatter=note.frontmatter,
        source=note.source,
        # Who last reviewed it (a username, or null).
        reviewed_by=note.reviewed_by.get_username() if note.reviewed_by_id and note.reviewed_by else None,
        session_id=note.session_id,
        content_hash=note.content_hash,
        review_note=note.review_note,
        created_at=note.created_at.isoformat(),
        updated_at=note.updated_at.isoformat(),
        links_out=links_out,
        links_in=links_in,
        project=note.project.name if note.project_id and note.project else None,
        verification=Verification(**verification_dict(note)),
        **supersession(note).model_dump(),
    )


def supersession(note: Note) -> Supersession:
    """`superseded_by` (slug or null), `superseded` (the sentence brain_get says) and `supersedes` (slugs)."""
    successor = note.superseded_by
    sentence = None
    if successor is not None:
        who = note.superseded_by_person.get_username() if note.superseded_by_person else "the service"
        when = note.superseded_at.date().isoformat() if note.superseded_at else "an unknown date"
        sentence = f"superseded by {successor.slug} on {when} by {who}: {note.superseded_reason}"
    return Supersession(
        superseded_by=successor.slug if successor is not None else None,
        superseded=sentence,
        supersedes=list(note.supersedes.order_by("slug").values_list("slug", flat=True)),
    )


def query_result(response: SearchResponse) -> QueryResult:
    """A search's answer as brain_query and POST /query show it."""
    return QueryResult.model_validate(response.as_dict())


def render_note_body(body: str) -> str:
    """A note's markdown as safe HTML, `[[wikilinks]]` linked to the notes they name (one query).

    A link whose target does not exist yet is marked `missing` and points at a search for it.
    """
    slugs = {slugify_path(link.target) for link in extract_wikilinks(body)}
    known = (
        dict(Note.objects.filter(slug__in=slugs).exclude(status="archived").values_list("slug", "pk")) if slugs else {}
    )

    def resolve(target: str) -> tuple[str, bool]:
        pk = known.get(slugify_path(target))
        if pk is not None:
            return reverse("brain-note", args=[pk]), True
        return f"{reverse('brain-search')}?q={quote(target)}&status=any", False

    return render_markdown(body, wikilink=resolve)
