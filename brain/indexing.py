"""What happens to the search side when a note changes.

The brain's write actions call `note_changed(note_id)` once their transaction
has committed. BM25 needs nothing here (it watches `BrainVersion`); the
embedding side enqueues the note's chunk/embedding sync in the background so
a write never waits on an embedding service; the review pages' similar-notes
ranking follows (`brain.similar`).
"""

from __future__ import annotations

import logging

from django.conf import settings

logger = logging.getLogger(__name__)

SYNC_NOTE_TASK = "brain.tasks.sync_note_embeddings"
SIMILAR_TASK = "brain.tasks.refresh_similar_notes"


def embeddings_enabled() -> bool:
    return settings.BRAIN_EMBEDDER != "off"


def note_changed(note_id: int) -> None:
    """Queue the background work of one changed note.

    Embedder on: its embedding sync, which then ranks its similar notes (they need its vectors).
    Embedder off: the ranking of its similar notes alone (`brain.similar`, for raw notes).
    Never raises: a broken queue must not fail a write that already committed
    (the periodic sync, and the note page's deferred panel, catch up).
    """
    try:
        from django_q.tasks import async_task

        if embeddings_enabled():
            async_task(SYNC_NOTE_TASK, note_id, task_name=f"embed-note-{note_id}", group="brain-embed")
        else:
            async_task(SIMILAR_TASK, note_id, task_name=f"similar-note-{note_id}", group="brain-similar")
    except Exception:  # noqa: BLE001 — the schedule catches up; the write stands
        logger.exception("could not enqueue the background work of note %s", note_id)
