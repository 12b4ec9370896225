"""The search side's stored parts: chunks, embeddings, similar notes and the BM25 change log."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.db import transaction
from django.utils import timezone

from brain.chunking import chunk_note
from brain.models import (
    NOTE_SOURCE_HASH,
    Embedding,
    Note,
    NoteChange,
    NoteChunk,
    NoteStatus,
    SimilarNotes,
)

if TYPE_CHECKING:
    from django.db.models import QuerySet
    from django_stubs_ext import WithAnnotations


class _SourceHash(TypedDict):
    text_md5: str  # NOTE_SOURCE_HASH of the note's title and body


# -- chunks and embeddings (brain.embedding_sync decides what is due; these write it) -------


def do_drop_archived_chunks(notes: QuerySet[Note], *, using: str = "default") -> int:
    """Delete the chunks of the archived notes among `notes` (their embeddings go with them); returns embeddings deleted."""
    archived = NoteChunk.objects.using(using).filter(note__in=notes.filter(status=NoteStatus.ARCHIVED))
    deleted = Embedding.objects.using(using).filter(chunk__in=archived).count()
    archived.delete()
    return deleted


def do_rechunk_note(note_id: int, *, using: str = "default") -> int:
    """Bring one note's chunk rows in line with its text; returns embeddings deleted."""
    with transaction.atomic(using=using):
        # The note row lock serialises concurrent syncs of the same note (the write
        # task and the schedule), so ordinals never collide.
        # The cast: NoteQuerySet's methods return a plain Note in the stubs, the annotation is lost on the way.
        note = cast(
            "WithAnnotations[Note, _SourceHash] | None",
            Note.objects.using(using)
            .select_for_update()
            .annotate(text_md5=NOTE_SOURCE_HASH)
            .filter(pk=note_id)
            .first(),
        )
        if note is None or note.status == NoteStatus.ARCHIVED:
            return 0
        wanted = chunk_note(note.title, note.body)
        existing = {c.ordinal: c for c in NoteChunk.objects.using(using).filter(note_id=note_id)}
        deleted = 0
        for chunk in wanted:
            fields = {
                "heading_path": chunk.heading_path,
                "text": chunk.text,
                "content_hash": chunk.content_hash,
                "source_hash": note.text_md5,
            }
            row = existing.pop(chunk.ordinal, None)
            if row is None:
                NoteChunk.objects.using(using).create(note_id=note_id, ordinal=chunk.ordinal, **fields)
            elif any(getattr(row, name) != value for name, value in fields.items()):
                for name, value in fields.items():
                    setattr(row, name, value)
                row.save(using=using)
        if existing:  # the note got shorter: drop the extra chunks and their embeddings
            gone = NoteChunk.objects.using(using).filter(id__in=[c.id for c in existing.values()])
            deleted = Embedding.objects.using(using).filter(chunk__in=gone).count()
            gone.delete()
        return deleted


def do_store_embeddings(model_key: str, rows: list[tuple[int, str, list[float]]], *, using: str = "default") -> int:
    """Upsert one embedding per (chunk, model) from `rows` of (chunk id, content hash, vector), in one bulk write.

    A chunk deleted or re-chunked since it was embedded is skipped; returns how many were stored.
    """
    if not rows:
        return 0
    with transaction.atomic(using=using):
        # Lock the chunks: one deleted or re-chunked meanwhile is skipped, and its hash
        # must still be the one that was embedded, or the vector would be stale.
        live = dict(
            NoteChunk.objects.using(using)
            .select_for_update()
            .filter(id__in=[cid for cid, _, _ in rows])
            .values_list("id", "content_hash")
        )
        objs = [
            Embedding(chunk_id=cid, model=model_key, dimensions=len(vec), content_hash=h, vector=vec)
            for cid, h, vec in rows
            if live.get(cid) == h
        ]
        Embedding.objects.using(using).bulk_create(
            objs,
            update_conflicts=True,
            unique_fields=["chunk", "model"],
            update_fields=["vector", "dimensions", "content_hash"],
        )
    return len(objs)


# -- what the review pages read about a note's neighbours (brain.similar ranks them) ----------------


def do_store_similar_notes(note: Note, found: Iterable[Any]) -> SimilarNotes:
    """Remember the notes most like `note` for its current text (`found`: `brain.similar.Similar` items)."""
    items = [item.as_dict() for item in found]
    row, _ = SimilarNotes.objects.update_or_create(
        note_id=note.pk,
        defaults={
            "content_hash": note.content_hash,
            "items": items,
            "duplicate_ids": [item["id"] for item in items if item["duplicate"]],
        },
    )
    return row


# -- the BM25 change log (brain.bm25 reads it to catch up) --------------------------------------

NOTE_CHANGE_KEEP_SECONDS = 24 * 3600


@transaction.atomic
def do_prune_note_changes(keep_seconds: int = NOTE_CHANGE_KEEP_SECONDS) -> int:
    """Forget index change-log rows older than `keep_seconds`, never the newest one.

    A search process idle for longer than that finds a gap in the log and
    builds (or maps) a whole base again; every other process is unaffected.
    """
    newest = NoteChange.objects.order_by("-version").values_list("version", flat=True).first()
    if newest is None:
        return 0
    cutoff = timezone.now() - timedelta(seconds=keep_seconds)
    deleted, _ = NoteChange.objects.filter(created_at__lt=cutoff, version__lt=newest).delete()
    return deleted
