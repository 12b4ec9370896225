"""The link graph between notes: neighbourhoods and a note's links in and out.

Edges are resolved NoteLinks (`target` set), walked in either direction:
a note is one hop from the notes it links to and from the notes that link
to it. The walk is a breadth-first search with one query per hop, so a
depth-d subgraph costs d + 1 queries whatever the size of the brain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from django.db.models import Q

from brain.models import Note, NoteLink, NoteStatus

# Deeper walks reach most of a well-linked brain and stop meaning "related".
MAX_DEPTH = 5


def _statuses(status: str | None) -> list[str]:
    """`status=None` means every note that is still searchable (not archived)."""
    if status is None:
        return [value for value in NoteStatus.values if value != NoteStatus.ARCHIVED]
    return [status]


def neighbour_distances(start_ids: list[int], depth: int, *, status: str | None = NoteStatus.WIKI) -> Mapping[int, int]:
    """{note id: hops from the nearest start note} for notes within `depth` hops (starts excluded)."""
    depth = max(0, min(depth, MAX_DEPTH))
    statuses = _statuses(status)
    seen: dict[int, int] = {note_id: 0 for note_id in start_ids}
    frontier = set(start_ids)
    for distance in range(1, depth + 1):
        if not frontier:
            break
        edges = NoteLink.objects.filter(
            Q(source_id__in=frontier) | Q(target_id__in=frontier),
            target__isnull=False,
            source__status__in=statuses,
            target__status__in=statuses,
        ).values_list("source_id", "target_id")
        reached: set[int] = set()
        for source_id, target_id in edges:
            for note_id in (source_id, target_id):
                if note_id not in seen:
                    seen[note_id] = distance
                    reached.add(note_id)
        frontier = reached
    return {note_id: distance for note_id, distance in seen.items() if distance > 0}


def subgraph(slug: str, depth: int = 1, *, status: str | None = NoteStatus.WIKI) -> list[Neighbour]:
    """Notes within `depth` hops of `slug`, either direction: `[{slug, title, distance}]`.

    Nearest first, then by slug. The note itself is not listed; an unknown
    slug (or one whose status is filtered out) has no neighbours.
    """
    start = Note.objects.filter(slug=slug, status__in=_statuses(status)).values_list("id", flat=True).first()
    if start is None:
        return []
    distances = neighbour_distances([start], depth, status=status)
    notes = Note.objects.filter(id__in=distances).values("id", "slug", "title")
    found: list[Neighbour] = [
        {"slug": note["slug"], "title": note["title"], "distance": distances[note["id"]]} for note in notes
    ]
    return sorted(found, key=lambda item: (item["distance"], item["slug"]))


class Neighbour(TypedDict):
    slug: str
    title: str
    distance: int  # hops from the note


class LinkOut(TypedDict):
    slug: str
    title: str | None  # None while the target does not exist yet
    kind: str
    resolved: bool


class LinkIn(TypedDict):
    slug: str
    title: str
    kind: str


# `in` is a keyword: the functional form.
NoteLinks = TypedDict("NoteLinks", {"out": list[LinkOut], "in": list[LinkIn]})


def links_for(note: Note) -> NoteLinks:
    """A note's links out (resolved or not) and in, for display by brain_get.

    `out`: `[{slug, title, kind, resolved}]` — `title` is None while the
    target does not exist yet. `in`: `[{slug, title, kind}]` from notes that
    are not archived.
    """
    outgoing = NoteLink.objects.filter(source=note).select_related("target").order_by("target_slug", "kind")
    out: list[LinkOut] = [
        {
            "slug": link.target_slug,
            "title": link.target.title if link.target else None,
            "kind": link.kind,
            "resolved": link.target is not None,
        }
        for link in outgoing
    ]
    incoming = (
        NoteLink.objects.filter(target=note)
        .exclude(source__status=NoteStatus.ARCHIVED)
        .select_related("source")
        .order_by("source__slug", "kind")
    )
    into: list[LinkIn] = [
        {"slug": link.source.slug, "title": link.source.title, "kind": link.kind} for link in incoming
    ]
    return {"out": out, "in": into}
