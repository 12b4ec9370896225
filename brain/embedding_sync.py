"""Keep note chunks and their embeddings in step with the notes.

    result = sync_embeddings(embedder)              # every note (schedule, backfill, brain_embed)
    result = sync_embeddings(embedder, note_ids=[7])  # one note, right after a write

1. Chunks of archived notes are deleted (their embeddings go with them).
2. Notes whose title/body changed since they were chunked are chunked again;
   chunks whose text is unchanged keep their rows and their embeddings.
3. Chunks with no embedding of the active model for their current hash get
   one: first copied from any embedding of the same model and hash (a moved
   section is not embedded twice), otherwise from the embedder.

Every step is idempotent. An embedder failure is recorded in `errors` and
leaves the chunk without a current embedding, so the next sync finishes the
job; nothing is written twice (one row per chunk and model).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from django.db.models import QuerySet

from brain import backlog, vectors
from brain.actions import do_drop_archived_chunks, do_rechunk_note, do_store_embeddings
from brain.backlog import missing_chunks, stale_notes
from brain.chunking import embed_text
from brain.models import Embedding, Note, NoteChunk
from hyperguild.lib.embedders import Embedder, EmbedderError

logger = logging.getLogger(__name__)

EMBED_BATCH = 32  # chunks per embedder call
RECHUNK_BATCH = 500  # notes loaded at a time while re-chunking
MAX_FAILED_BATCHES = 3  # a service that keeps failing is not hammered for the whole corpus


class SyncResultJson(TypedDict):
    """A `SyncResult` as JSON (the django-q2 result of a slice, the embedding API's answer)."""

    added: int
    deleted: int
    rechunked: int
    pending: int
    errors: list[str]


@dataclass
class SyncResult:
    added: int = 0
    deleted: int = 0
    rechunked: int = 0
    pending: int = 0  # chunks still without an embedding when the sync ended
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> SyncResultJson:
        return {
            "added": self.added,
            "deleted": self.deleted,
            "rechunked": self.rechunked,
            "pending": self.pending,
            "errors": list(self.errors),
        }


def sync_embeddings(
    embedder: Embedder,
    *,
    note_ids: Iterable[int] | None = None,
    using: str = "default",
    progress: Callable[[int, int], None] | None = None,
    max_seconds: float | None = None,
) -> SyncResult:
    """One sync pass; `progress(done, total)` is called as chunks are embedded.

    With `max_seconds`, embedding stops at the first batch boundary past that many seconds and `pending` says
    what is left (the worker's slices: brain.tasks); without it, the pass embeds everything.
    """
    result = SyncResult()
    deadline = time.monotonic() + max_seconds if max_seconds is not None else None
    notes = Note.objects.using(using).all()
    if note_ids is not None:
        notes = notes.filter(id__in=list(note_ids))
    result.deleted += do_drop_archived_chunks(notes, using=using)
    _rechunk_changed(notes, result, using)
    _embed_missing(embedder, notes, result, using, progress, deadline)
    backlog.forget()
    return result


def _rechunk_changed(notes: QuerySet[Note], result: SyncResult, using: str) -> None:
    last_id = 0
    while True:
        # Walk by id so a note that somehow stays stale is not looped on; one edited again
        # behind the cursor is queued by its own write and caught by the next sync.
        batch = list(
            stale_notes(notes).filter(id__gt=last_id).order_by("id").values_list("id", flat=True)[:RECHUNK_BATCH]
        )
        if not batch:
            return
        last_id = batch[-1]
        for note_id in batch:
            result.deleted += do_rechunk_note(note_id, using=using)
            result.rechunked += 1


def _embed_missing(
    embedder: Embedder,
    notes: QuerySet[Note],
    result: SyncResult,
    using: str,
    progress: Callable[[int, int], None] | None,
    deadline: float | None = None,
) -> None:
    todo = list(missing_chunks(embedder, notes, using).values_list("id", "content_hash"))
    total, done, failed_batches = len(todo), 0, 0
    if progress:
        progress(0, total)
    # 1. Reuse vectors already computed for the same text under the same model.
    hashes = {h for _, h in todo}
    known: dict[str, list[float]] = {}
    for start in range(0, len(todo), 1000):
        part = {h for _, h in todo[start : start + 1000]}
        for content_hash, vector in (
            Embedding.objects.using(using)
            .filter(model=embedder.key, content_hash__in=part)
            .values_list("content_hash", "vector")
        ):
            known.setdefault(content_hash, list(vector))
    del hashes
    for start in range(0, len(todo), EMBED_BATCH):
        if deadline is not None and start and time.monotonic() >= deadline:
            break  # the slice is spent (after one batch at least): `pending` below says what the next one takes
        batch = todo[start : start + EMBED_BATCH]
        fresh = [(cid, h) for cid, h in batch if h not in known]
        if fresh:
            texts = _embed_texts([cid for cid, _ in fresh], using)
            try:
                vectors_ = embedder.embed_documents([texts[cid] for cid, _ in fresh])
            except EmbedderError as exc:
                result.errors.append(f"chunks {fresh[0][0]}–{fresh[-1][0]}: {exc}")
                failed_batches += 1
                if failed_batches >= MAX_FAILED_BATCHES:
                    result.errors.append(
                        f"stopped after {failed_batches} failed batches; the next sync resumes where this one stopped"
                    )
                    break
                continue
            for (_, h), vector in zip(fresh, vectors_, strict=True):
                known[h] = vector
        rows = [(cid, h, known[h]) for cid, h in batch if h in known]
        result.added += _store(embedder, rows, using)
        done += len(batch)
        if progress:
            progress(done, total)
    result.pending = missing_chunks(embedder, notes, using).count()


def _embed_texts(chunk_ids: list[int], using: str) -> dict[int, str]:
    """What the embedder reads for each chunk: rebuilt from the note, as `brain.chunking` made it."""
    texts = {}
    for chunk in NoteChunk.objects.using(using).filter(id__in=chunk_ids).select_related("note"):
        texts[chunk.id] = embed_text(chunk.note.title, chunk.heading_path, chunk.text)
    return texts


def _store(embedder: Embedder, rows: list[tuple[int, str, list[float]]], using: str) -> int:
    if not rows:
        return 0
    vectors.ensure_index(embedder.key, len(rows[0][2]), using=using)
    return do_store_embeddings(embedder.key, rows, using=using)
