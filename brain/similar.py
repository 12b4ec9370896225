"""The notes most like a note, and which of them are likely duplicates: what a reviewer sees next to a raw note.

Candidates come from the brain's own hybrid search (`brain.search.rank_notes`: BM25, and the
vectors when the embedder is on), with the note's title and the start of its body as the query.
Each candidate gets two scores:

- `words`: the share of words in common (`hyperguild.lib.diffs.similarity`), which finds copies;
- `meaning`: the cosine of the two notes' closest stored chunk vectors (the embedder's passages),
  which finds paraphrases that share few words. `None` when the embedder is off or a note has no
  vector yet.

A candidate is a likely duplicate from `DUPLICATE_WORDS` (words) or `DUPLICATE_MEANING` (meaning). The result is stored per note (`SimilarNotes`,
written by `brain.actions.do_store_similar_notes`) for the note's current text: pages read it,
they never search and diff every candidate on each view.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
from django.db.models import F

from brain import vectors
from brain.actions import do_store_similar_notes
from brain.models import Embedding, Note, NoteStatus, SimilarNotes
from brain.search import SearchInputError, rank_notes
from hyperguild.lib.diffs import similarity

logger = logging.getLogger(__name__)

SIMILAR_NOTES = 6
QUERY_CHARS = 500  # how much of the body the search query takes (the vector side embeds it)
WORD_CHARS = 5000  # how much of two bodies the word score compares
NOTE_CHUNKS = 4  # the note's first chunks whose vectors are compared with each candidate's
# A raw note this similar to a wiki note is a likely duplicate: promoting it asks to confirm (the review UI).
DUPLICATE_WORDS = 0.8  # share of words in common (0-1)
DUPLICATE_MEANING = 0.91  # cosine of the closest chunk vectors: paraphrases share few words


class SimilarJson(TypedDict):
    """One ranked note as `SimilarNotes.items` stores it."""

    id: int
    words: float
    meaning: float | None
    duplicate: bool


@dataclass(frozen=True)
class Similar:
    id: int
    words: float
    meaning: float | None

    @property
    def duplicate(self) -> bool:
        return self.words >= DUPLICATE_WORDS or (self.meaning is not None and self.meaning >= DUPLICATE_MEANING)

    def as_dict(self) -> SimilarJson:
        return {"id": self.id, "words": self.words, "meaning": self.meaning, "duplicate": self.duplicate}


def find_similar(note: Note) -> list[Similar]:
    """Rank the notes most like `note` now (a search, a word score per candidate, vectors when on)."""
    query = f"{note.title}\n{note.body[:QUERY_CHARS]}"
    try:
        ranking = rank_notes(query, depth=SIMILAR_NOTES + 1, status=None)
    except SearchInputError:
        return []
    ids = [note_id for note_id, _, _ in ranking.fused if note_id != note.pk][:SIMILAR_NOTES]
    bodies = dict(Note.objects.filter(pk__in=ids).exclude(status=NoteStatus.ARCHIVED).values_list("pk", "body"))
    meanings = _meanings(note, list(bodies), ranking.used_vectors)
    found = [
        Similar(
            id=other,
            words=round(similarity(note.body[:WORD_CHARS], bodies[other][:WORD_CHARS]), 4),
            meaning=meanings.get(other),
        )
        for other in ids
        if other in bodies
    ]
    # Duplicates first, then by the closer of the two scores: what the reviewer should look at first.
    found.sort(key=lambda item: (not item.duplicate, -max(item.words, item.meaning or 0.0)))
    return found


def _meanings(note: Note, ids: list[int], model_key: str | None) -> dict[int, float]:
    """Cosine of `note`'s closest stored chunk vector with each candidate's closest one, rounded.

    Only vectors already stored (the embedding sync computes them in the background, and queues this
    ranking after it): nothing is embedded on a page's or a promote's path. {} when the embedder is
    off or the note has no current vector yet; candidates without one are left out.
    """
    if not ids or model_key is None:
        return {}
    try:
        own = list(
            Embedding.objects.filter(model=model_key, chunk__note=note, content_hash=F("chunk__content_hash"))
            .order_by("chunk__ordinal")
            .values_list("vector", flat=True)[:NOTE_CHUNKS]
        )
        best: dict[int, float] = {}
        for vector in own:
            for other, score in vectors.similarities(model_key, np.asarray(vector).tolist(), ids).items():
                best[other] = max(score, best.get(other, -1.0))
    except Exception as exc:  # noqa: BLE001 — a vector-side fault costs the meaning score, not the page
        logger.warning("no meaning scores for note %s: %s", note.pk, exc)
        return {}
    return {other: round(score, 4) for other, score in best.items()}


# --- what the pages read ---------------------------------------------------------------------


def stored(note: Note) -> list[Similar] | None:
    """The stored ranking for the note's current text, or None when it has none yet (or an older one)."""
    row = _row(note)
    return None if row is None else _items(row)


class SimilarNote(TypedDict):
    """A similar note as the review pages show it: percentages, and the note as it is now."""

    note: Note
    words: int
    meaning: int | None
    duplicate: bool


def _row(note: Note) -> SimilarNotes | None:
    return SimilarNotes.objects.filter(note_id=note.pk, content_hash=note.content_hash).first()


def _items(row: SimilarNotes) -> list[Similar]:
    return [Similar(id=item["id"], words=item["words"], meaning=item.get("meaning")) for item in row.items]


def refresh(note: Note) -> list[Similar]:
    """Rank now and store the result for the note's current text."""
    found = find_similar(note)
    do_store_similar_notes(note, found)
    return found


def current(note: Note) -> list[Similar]:
    """For a write that must decide (promote): the stored ranking while it is for this text and no wiki
    note changed since it was made, else ranked (and stored) now."""
    row = _row(note)
    if row is not None and not Note.objects.wiki().filter(updated_at__gt=row.computed_at).exists():
        return _items(row)
    return refresh(note)


def with_notes(found: list[Similar]) -> list[SimilarNote]:
    """Each item with its note as it is now (title, status, place): statuses move on after the ranking."""
    notes = Note.objects.in_bulk([item.id for item in found])
    return [
        {
            "note": notes[item.id],
            "words": round(item.words * 100),
            "meaning": None if item.meaning is None else round(item.meaning * 100),
            "duplicate": item.duplicate,
        }
        for item in found
        if item.id in notes and notes[item.id].status != NoteStatus.ARCHIVED
    ]


def wiki_duplicates(found: list[Similar]) -> list[SimilarNote]:
    """The likely duplicates that are in the wiki now: the ones promoting would put side by side."""
    return [item for item in with_notes(found) if item["duplicate"] and item["note"].status == NoteStatus.WIKI]


def duplicate_badges(notes: list[Note]) -> Mapping[int, list[Note]]:
    """note id → the wiki notes it likely duplicates, for a page of the queue (two queries, whatever its size)."""
    rows = SimilarNotes.objects.filter(note_id__in=[n.pk for n in notes]).values_list(
        "note_id", "content_hash", "duplicate_ids"
    )
    hashes = {n.pk: n.content_hash for n in notes}
    wanted = {note_id: ids for note_id, content_hash, ids in rows if ids and hashes.get(note_id) == content_hash}
    wiki = Note.objects.wiki().only("id", "slug", "title").in_bulk({i for ids in wanted.values() for i in ids})
    badges = {note_id: [wiki[i] for i in ids if i in wiki] for note_id, ids in wanted.items()}
    return {note_id: found for note_id, found in badges.items() if found}
