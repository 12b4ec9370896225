"""What happens to the search side when a note changes.

The brain's write actions call `note_changed(note_id)` once their transaction
has committed. BM25 needs nothing here (it watches `BrainVersion`); the
embedding side enqueues the note's chunk/embedding sync in the background so
a write never waits on an embedding service.
"""

from __future__ import annotations

import logging

from django.conf import settings

logger = logging.getLogger(__name__)

SYNC_NOTE_TASK = "brain.tasks.sync_note_embeddings"


def embeddings_enabled() -> bool:
    return settings.BRAIN_EMBEDDER != "off"


def note_changed(note_id: int) -> None:
    """Queue the embedding sync of one note; a no-op when BRAIN_EMBEDDER=off.

    Never raises: a broken queue must not fail a write that already committed
    (the periodic sync picks the note up later).
    """
    if not embeddings_enabled():
        return
    try:
        from django_q.tasks import async_task

        async_task(SYNC_NOTE_TASK, note_id, task_name=f"embed-note-{note_id}", group="brain-embed")
    except Exception:  # noqa: BLE001 — the schedule catches up; the write stands
        logger.exception("could not enqueue the embedding sync of note %s", note_id)
