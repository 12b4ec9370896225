"""What happens to the search side when a note changes.

The brain's write actions call `note_changed(note_id)` once their transaction
has committed; inside their transaction they call `bump_brain_version`, which
BM25 watches (`BrainVersion`, `NoteChange`). The
embedding side enqueues the note's chunk/embedding sync in the background so
a write never waits on an embedding service; the review pages' similar-notes
ranking follows (`brain.similar`).

Bulk paths (folder import, the BRAIN_DIR mirror, bulk review actions) run
inside `notes_changed_in_bulk()`: the notes they change are queued together,
one task per `BULK_BATCH` notes, never one task per note.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.db import connection, transaction
from django_q.tasks import async_task

from brain import bm25
from brain.models import NoteChange

logger = logging.getLogger(__name__)

SYNC_NOTE_TASK = "brain.tasks.sync_note_embeddings"
SIMILAR_TASK = "brain.tasks.refresh_similar_notes"
READ_TASK = "brain.tasks.read_note_passages"
# Notes per queued task on a bulk path: a task stays well inside the worker's timeout (ranking or
# embedding a few hundred notes), and a large import hands the workers work while it still runs.
BULK_BATCH = 200

# The note ids changed inside the current `notes_changed_in_bulk()` block (None outside one). A context
# variable, so threads and requests served side by side each collect their own.
_pending: contextvars.ContextVar[dict[int, None] | None] = contextvars.ContextVar("brain_notes_changed", default=None)


def bump_brain_version(note_ids: Iterable[int] | None = None) -> int:
    """Move the corpus version and log which notes changed (None: the whole corpus, e.g. a bulk load).

    Call it inside the writer's transaction: the version row stays locked
    until commit, so versions become visible in the order they were given
    and an index that has seen version v has seen every change up to v.
    """
    with connection.cursor() as cursor:
        # One statement, safe when the row does not exist yet (a new or flushed database).
        cursor.execute(
            "INSERT INTO brain_brainversion (id, version, corpus_id) VALUES (1, 1, gen_random_uuid()) "
            "ON CONFLICT (id) DO UPDATE SET version = brain_brainversion.version + 1 RETURNING version"
        )
        row = cursor.fetchone()
    assert row is not None  # RETURNING gives the row the statement wrote
    version: int = row[0]
    ids = [None] if note_ids is None else sorted(set(note_ids))
    NoteChange.objects.bulk_create([NoteChange(version=version, note_id=note_id) for note_id in ids])
    bm25.note_local_write()
    transaction.on_commit(bm25.note_local_write)  # and again once others can see it
    return version


def embeddings_enabled() -> bool:
    return settings.BRAIN_EMBEDDER != "off"


def note_changed(note_id: int) -> None:
    """Queue the background work of one changed note (inside a bulk block: with the block's other notes).

    Embedder on: its embedding sync, which then ranks its similar notes (they need its vectors).
    Embedder off: the ranking of its similar notes alone (`brain.similar`, for raw notes).
    Never raises: a broken queue must not fail a write that already committed
    (the periodic sync, and the note page's deferred panel, catch up).
    """
    pending = _pending.get()
    if pending is None:
        queue_background_work([note_id])
        return
    pending[note_id] = None  # a dict keeps the order the notes changed in, each note once
    if len(pending) >= BULK_BATCH:
        ids = list(pending)
        pending.clear()
        queue_background_work(ids)


@contextlib.contextmanager
def notes_changed_in_bulk() -> Iterator[None]:
    """Collect the notes changed inside the block and queue their work as one task per `BULK_BATCH` notes.

    What was collected is queued when the block ends, also when it ends with an error: the notes
    written before the error are committed and their work is due. Nested blocks join the outermost.
    """
    if _pending.get() is not None:
        yield
        return
    token = _pending.set({})
    try:
        yield
    finally:
        ids = list(_pending.get() or ())
        _pending.reset(token)
        if ids:
            queue_background_work(ids)


def queue_background_work(note_ids: Iterable[int]) -> None:
    """One task for `note_ids` (their embedding sync, or their similar-notes ranking), and one that reads their
    passages ahead for brain_answer (`brain.tasks.read_note_passages`, unless BRAIN_PASSAGE_READER=off); never raises.

    django-q2's ORM broker calls `close_old_connections()` before each enqueue made outside a
    transaction; with CONN_MAX_AGE=0 that closes the connection the write just used, and the next
    query opens a new one (two connections per write: 4,001 for an import of 2,000 notes). Inside
    `atomic()` the broker writes its row on the connection already open; inside a caller's
    transaction that block is a savepoint, so a failed enqueue leaves the caller's transaction usable.
    """
    ids = list(note_ids)
    if not ids:
        return
    try:
        with transaction.atomic():
            if embeddings_enabled():
                async_task(
                    SYNC_NOTE_TASK,
                    *ids,
                    task_name=_task_name("embed-notes", ids),
                    group="brain-embed",
                    cluster=settings.EMBED_QUEUE,
                )
            else:
                async_task(SIMILAR_TASK, *ids, task_name=_task_name("similar-notes", ids), group="brain-similar")
            if settings.BRAIN_PASSAGE_READER != "off":
                # In the default cluster: the embedding cluster's one worker stays on the embedding backlog, which
                # search needs more than brain_answer needs its passages read ahead.
                async_task(READ_TASK, *ids, task_name=_task_name("read-passages", ids), group="brain-passages")
    except Exception:  # noqa: BLE001 — the schedule catches up; the write stands
        logger.exception("could not enqueue the background work of %d note(s) from note %s", len(ids), ids[0])


def _task_name(kind: str, ids: list[int]) -> str:
    if len(ids) == 1:
        return f"{kind}-{ids[0]}"
    return f"{kind}-{ids[0]}-and-{len(ids) - 1}-more"
