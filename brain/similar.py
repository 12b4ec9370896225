"""The notes most like a note, and which of them are likely duplicates: what a reviewer sees next to a raw note.

Candidates come from the brain's own hybrid search (`brain.search.rank_notes`: BM25, and the
vectors when the embedder is on), with the note's title and the start of its body as the query.
Each candidate gets two scores:

- `words`: the share of words in common (`hyperguild.lib.diff.similarity`), which finds copies;
- `meaning`: the cosine of the two bodies' passage embeddings (the configured embedder), which
  finds paraphrases that share few words. `None` when the embedder is off or fails.

A candidate is a likely duplicate from `BRAIN_DUPLICATE_THRESHOLD` (words) or
`BRAIN_DUPLICATE_MEANING_THRESHOLD` (meaning). The result is stored per note (`SimilarNotes`,
written by `brain.actions.do_store_similar_notes`) for the note's current text: pages read it,
they never search and diff every candidate on each view.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import numpy as np
from django.conf import settings

from brain.models import Note, NoteStatus, SimilarNotes
from brain.search import SearchInputError, rank_notes
from hyperguild.lib.diff import similarity
from hyperguild.lib.embedders import get_embedder

logger = logging.getLogger(__name__)

SIMILAR_NOTES = 6
QUERY_CHARS = 1000  # how much of the body the search query takes
WORD_CHARS = 5000  # how much of two bodies the word score compares
MEANING_CHARS = 2000  # how much of each body is embedded for the meaning score (the model reads ~512 tokens)


@dataclass(frozen=True)
class Similar:
    id: int
    words: float
    meaning: float | None

    @property
    def duplicate(self) -> bool:
        return self.words >= settings.BRAIN_DUPLICATE_THRESHOLD or (
            self.meaning is not None and self.meaning >= settings.BRAIN_DUPLICATE_MEANING_THRESHOLD
        )

    def as_dict(self) -> dict:
        return {**asdict(self), "duplicate": self.duplicate}


def find_similar(note: Note) -> list[Similar]:
    """Rank the notes most like `note` now (a search, a word score per candidate, vectors when on)."""
    query = f"{note.title}\n{note.body[:QUERY_CHARS]}"
    try:
        ranking = rank_notes(query, depth=SIMILAR_NOTES + 1, status=None)
    except SearchInputError:
        return []
    ids = [note_id for note_id, _, _ in ranking.fused if note_id != note.pk][:SIMILAR_NOTES]
    bodies = dict(Note.objects.filter(pk__in=ids).exclude(status=NoteStatus.ARCHIVED).values_list("pk", "body"))
    meanings = _meanings(note, bodies, ranking.used_vectors)
    found = [
        Similar(id=other, words=round(similarity(note.body[:WORD_CHARS], bodies[other][:WORD_CHARS]), 4),
                meaning=meanings.get(other))
        for other in ids if other in bodies
    ]  # fmt: skip
    # Duplicates first, then by the closer of the two scores: what the reviewer should look at first.
    found.sort(key=lambda item: (not item.duplicate, -max(item.words, item.meaning or 0.0)))
    return found


def _meanings(note: Note, bodies: dict[int, str], model_key: str | None) -> dict[int, float]:
    """Cosine of the passage embeddings of `note`'s body and each candidate's, rounded; {} with no vectors.

    Bodies without titles: two notes on one fact often differ most in their titles, and the stored
    chunk vectors include them. At most SIMILAR_NOTES + 1 short texts, embedded off the page's path.
    """
    if not bodies or model_key is None:
        return {}
    embedder = get_embedder()
    if embedder is None or embedder.key != model_key:
        return {}
    ids = list(bodies)
    try:
        matrix = np.asarray(embedder.embed_documents(
            [(note.body or note.title)[:MEANING_CHARS], *((bodies[i] or " ")[:MEANING_CHARS] for i in ids)]
        ), dtype=float)  # fmt: skip
    except Exception as exc:  # noqa: BLE001 — an embedder outage costs the meaning score, not the page
        logger.warning("no meaning scores for note %s: %s", note.pk, exc)
        return {}
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    unit = matrix / norms[:, None]
    scores = unit[1:] @ unit[0]
    return {other: round(float(score), 4) for other, score in zip(ids, scores, strict=True)}


# --- what the pages read ---------------------------------------------------------------------


def stored(note: Note) -> list[Similar] | None:
    """The stored ranking for the note's current text, or None when it has none yet (or an older one)."""
    row = SimilarNotes.objects.filter(note_id=note.pk, content_hash=note.content_hash).first()
    if row is None:
        return None
    return [Similar(id=item["id"], words=item["words"], meaning=item.get("meaning")) for item in row.items]


def refresh(note: Note) -> list[Similar]:
    """Rank now and store the result for the note's current text."""
    from brain.actions import do_store_similar_notes

    found = find_similar(note)
    do_store_similar_notes(note, found)
    return found


def current(note: Note) -> list[Similar]:
    """The stored ranking when it is for this text, else ranked (and stored) now: for a write that must decide."""
    found = stored(note)
    return found if found is not None else refresh(note)


def with_notes(found: list[Similar]) -> list[dict]:
    """Each item with its note as it is now (title, status, place): statuses move on after the ranking."""
    notes = Note.objects.in_bulk([item.id for item in found])
    return [
        {"note": notes[item.id], "words": round(item.words * 100), "meaning": None if item.meaning is None
         else round(item.meaning * 100), "duplicate": item.duplicate}
        for item in found if item.id in notes and notes[item.id].status != NoteStatus.ARCHIVED
    ]  # fmt: skip


def wiki_duplicates(found: list[Similar]) -> list[dict]:
    """The likely duplicates that are in the wiki now: the ones promoting would put side by side."""
    return [item for item in with_notes(found) if item["duplicate"] and item["note"].status == NoteStatus.WIKI]


def duplicate_badges(notes: list[Note]) -> dict[int, list[Note]]:
    """note id → the wiki notes it likely duplicates, for a page of the queue (two queries, whatever its size)."""
    rows = SimilarNotes.objects.filter(note_id__in=[n.pk for n in notes]).values_list(
        "note_id", "content_hash", "duplicate_ids"
    )
    hashes = {n.pk: n.content_hash for n in notes}
    wanted = {note_id: ids for note_id, content_hash, ids in rows if ids and hashes.get(note_id) == content_hash}
    wiki = Note.objects.wiki().only("id", "slug", "title").in_bulk({i for ids in wanted.values() for i in ids})
    badges = {note_id: [wiki[i] for i in ids if i in wiki] for note_id, ids in wanted.items()}
    return {note_id: found for note_id, found in badges.items() if found}
