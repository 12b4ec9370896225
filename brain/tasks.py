"""django-q2 tasks of the brain (small functions that call folder logic and actions)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django_q.models import OrmQ
from django_q.tasks import async_task

from brain import passage_reader, similar
from brain.actions import do_prune_note_changes, do_run_note_check, do_sync_project
from brain.actions.truth import NoteCheckJson, RecheckOutcomeJson
from brain.backlog import EMBED_HEARTBEAT
from brain.embedding_sync import SyncResultJson
from brain.embedding_sync import sync_embeddings as run_sync
from brain.folder import FolderSummaryJson, sync_mirror
from brain.indexing import READ_TASK, SIMILAR_TASK
from brain.models import Note, NoteStatus, Project
from hyperguild.actions import do_record_worker_heartbeat
from hyperguild.lib.embedders import get_embedder

logger = logging.getLogger(__name__)

MIRROR_SCHEDULE = "brain-mirror"
# pg advisory lock key: one mirror round at a time across every worker and replica.
MIRROR_LOCK_KEY = 0x6272_6169_6E00  # "brain\0"
EMBED_SCHEDULE = "brain-embeddings"
INDEX_PRUNE_SCHEDULE = "brain-index-prune"
PASSAGE_VECTOR_PRUNE_SCHEDULE = "brain-passage-vector-prune"
VERIFY_SCHEDULE = "brain-verify-projects"
EMBED_TASK = "brain.tasks.sync_embeddings"
# One embedding task embeds for about this long, then queues the next slice: a backlog never holds the embedding
# cluster for longer than a slice, a slice killed with its cluster loses at most this much work, and the cluster's
# timeout (BRAIN_EMBED_TASK_TIMEOUT in settings, 300 s) stays far above it.
EMBED_SLICE_SECONDS = 20.0
# One passage-reading task reads for about this long (brain_answer's passages read ahead, in the default cluster beside
# the heartbeat, the schedules and the skills: an import of 2,000 wiki notes queues 10 of them), then queues the rest.
READ_SLICE_SECONDS = 5.0
READ_BRAIN_TASK = "brain.tasks.read_brain_passages"
BRAIN_READ_PAGE = 100  # wiki notes loaded at a time by read_brain_passages
# Seconds between checks of every project's branch head (notes re-verified when it moved, brain.truth).
VERIFY_INTERVAL = 300
# Seconds between embedding syncs: each write queues its own embedding, so this only catches up on what was missed.
EMBED_SYNC_INTERVAL = 300


# What each task returns: its django-q2 result (stored as JSON-shaped data, shown in the admin).


class Skipped(TypedDict):
    skipped: str  # why the task did nothing


class SimilarRanking(TypedDict):
    ranked: int
    skipped: int
    failed: int
    similar: int
    duplicates: int
    queued: int  # raw notes left for a task of their own (the slice's time ran out)


class SimilarFailed(TypedDict):
    error: str


class EmbeddingSlice(SyncResultJson, total=False):
    next_slice_queued: bool  # chunks were left: whether this slice queued the next one
    similar: SimilarRanking | SimilarFailed  # `sync_note_embeddings` only


class Pruned(TypedDict):
    deleted: int


class PassagesRead(TypedDict):
    notes: int  # notes whose passages were looked at
    passages: int
    read: int  # passages no stored vector held: read now
    queued: int  # notes left for a task of their own (the slice's time ran out)


class BrainRead(TypedDict):
    notes: int  # wiki notes whose passages were looked at
    passages: int
    read: int  # passages no stored vector held: read now
    next_after: int | None  # the id the next slice starts after; None when every wiki note was reached


def schedules() -> list[tuple[str, str, int]]:
    """Periodic schedules installed by `do_ensure_schedules()`: the mirror runs only with BRAIN_DIR set."""
    wanted: list[tuple[str, str, int]] = [
        (INDEX_PRUNE_SCHEDULE, "brain.tasks.prune_note_changes", 3600),
        (PASSAGE_VECTOR_PRUNE_SCHEDULE, "brain.tasks.prune_passage_vectors", 24 * 3600),
        (VERIFY_SCHEDULE, "brain.tasks.verify_projects", VERIFY_INTERVAL),
    ]
    if settings.BRAIN_DIR:
        wanted.append((MIRROR_SCHEDULE, "brain.tasks.sync_brain_dir", settings.BRAIN_SYNC_INTERVAL))
    if settings.BRAIN_EMBEDDER != "off":
        wanted.append((EMBED_SCHEDULE, EMBED_TASK, EMBED_SYNC_INTERVAL))
    return wanted


def sync_brain_dir() -> FolderSummaryJson | Skipped:
    """One round of the two-way BRAIN_DIR mirror; returns its summary (kept in the django-q2 result)."""
    if not settings.BRAIN_DIR:
        return {"skipped": "BRAIN_DIR is not set"}
    # Two rounds at once (a slow round overlapping the next schedule, or two
    # clusters) would both see the same file as new; the second one skips.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [MIRROR_LOCK_KEY])
        if not cursor.fetchone()[0]:
            return {"skipped": "another mirror round is running"}
    try:
        return sync_mirror(Path(settings.BRAIN_DIR)).as_dict()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [MIRROR_LOCK_KEY])


def queue_embedding_slice() -> bool:
    """Queue one `sync_embeddings` slice on the embedding cluster unless one already waits there; True if queued.

    `serve` calls it at every start, so a backlog left by a stop resumes at once; each slice calls it while
    chunks are left. Checking for a waiting one keeps the schedule, the start and a slice from stacking copies.
    """
    waiting = OrmQ.objects.filter(key=settings.EMBED_QUEUE, lock__lte=timezone.now())
    if any(message.func() == EMBED_TASK for message in waiting):
        return False
    with transaction.atomic():  # the broker's row on the connection already open (brain.indexing says why)
        async_task(EMBED_TASK, task_name="embed-backlog", group="brain-embed", cluster=settings.EMBED_QUEUE)
    return True


def resume_embedding_backlog() -> None:
    """At `serve`'s start: a backlog left by the last stop resumes at once, not at the next schedule."""
    if settings.BRAIN_EMBEDDER != "off":
        queue_embedding_slice()


def sync_embeddings(max_seconds: float | None = EMBED_SLICE_SECONDS) -> EmbeddingSlice | Skipped:
    """One slice of the embedding backlog: chunk new and changed notes, embed for about `max_seconds`, drop
    embeddings of removed chunks; queue the next slice while chunks are left and this one made progress (an
    embedder that keeps failing waits for the schedule instead of being called in a loop)."""
    do_record_worker_heartbeat(EMBED_HEARTBEAT)
    embedder = get_embedder()
    if embedder is None:
        return {"skipped": "BRAIN_EMBEDDER is off"}
    result = run_sync(embedder, max_seconds=max_seconds)
    summary: EmbeddingSlice = {**result.as_dict()}
    if result.pending and result.added:
        summary["next_slice_queued"] = queue_embedding_slice()
    return summary


def sync_note_embeddings(*note_ids: int) -> EmbeddingSlice | Skipped:
    """The same for the notes of one write or one batch of a bulk path, queued by `brain.indexing`; bounded like
    a slice (what is left of these notes, the backlog's next slice takes)."""
    do_record_worker_heartbeat(EMBED_HEARTBEAT)
    embedder = get_embedder()
    if embedder is None:
        return {"skipped": "BRAIN_EMBEDDER is off"}
    started = time.monotonic()
    synced = run_sync(embedder, note_ids=note_ids, max_seconds=EMBED_SLICE_SECONDS)
    result: EmbeddingSlice = {**synced.as_dict()}
    if synced.pending:
        result["next_slice_queued"] = queue_embedding_slice()
    try:
        # What is left of the slice ranks the similar notes; the rest is queued as a task of its own.
        left = max(0.0, EMBED_SLICE_SECONDS - (time.monotonic() - started))
        result["similar"] = refresh_similar_notes(*note_ids, max_seconds=left)
    except Exception as exc:  # noqa: BLE001 — the vectors are stored; the note page ranks it on its next view
        logger.warning(
            "could not rank the similar notes of %d note(s) from note %s: %s", len(note_ids), note_ids[0], exc
        )
        result["similar"] = {"error": str(exc)}
    return result


def prune_note_changes() -> Pruned:
    """Hourly: drop BM25 change-log rows older than a day (`brain.actions.do_prune_note_changes`)."""
    return {"deleted": do_prune_note_changes()}


def prune_passage_vectors() -> Pruned:
    """Daily: drop the passage reader's stored vectors of passages no note holds any more
    (`brain.passage_reader.prune`)."""
    return {"deleted": passage_reader.prune()}


def read_note_passages(*note_ids: int, max_seconds: float | None = READ_SLICE_SECONDS) -> PassagesRead | Skipped:
    """Read ahead the passages of the wiki notes of `note_ids` (brain_answer's sources) with the passage reader and
    store their vectors (`brain.passage_reader.read_ahead`), so that the first question over a newly written or
    imported note does not wait for the encoder (bench/read_ahead.py). Queued by `brain.indexing` with each write's
    background work, in the default cluster (the embedding cluster's one worker stays on the embedding backlog), in
    slices of READ_SLICE_SECONDS: the notes not reached are queued as a task of their own, behind what was queued
    meanwhile, so a large import's reading never holds a worker of the default cluster long."""
    if passage_reader.encoder() is None:
        return {"skipped": "the passage reader is off"}
    notes = Note.objects.filter(pk__in=note_ids, status=NoteStatus.WIKI).in_bulk()
    ordered = [notes[pk] for pk in note_ids if pk in notes]
    deadline = time.monotonic() + max_seconds if max_seconds is not None else None
    done, passages, read = passage_reader.read_ahead(ordered, deadline)
    rest = [note.pk for note in ordered[done:]]
    if rest:
        with transaction.atomic():
            async_task(
                READ_TASK,
                *rest,
                task_name=f"read-passages-{rest[0]}-and-{len(rest) - 1}-more",
                group="brain-passages",
            )
    return {"notes": done, "passages": passages, "read": read, "queued": len(rest)}


def read_brain_passages(after: int = 0, max_seconds: float | None = READ_SLICE_SECONDS) -> BrainRead | Skipped:
    """Read ahead the passages of every wiki note with an id above `after` that no stored vector holds yet, in id
    order: the notes written before passages were read ahead with each write (or while the reader was off) are read
    too, not only when a question first needs them. Queued by `serve` at its start (`resume_passage_reading`); in
    slices of READ_SLICE_SECONDS in the default cluster, each queueing the next after the last note it finished. A
    note already read costs its split and one lookup (a brain of 5,000 notes whose passages are all stored: a few
    seconds)."""
    if passage_reader.encoder() is None:
        return {"skipped": "the passage reader is off"}
    deadline = time.monotonic() + max_seconds if max_seconds is not None else None
    result: BrainRead = {"notes": 0, "passages": 0, "read": 0, "next_after": None}
    wiki = Note.objects.filter(status=NoteStatus.WIKI).order_by("pk")
    while True:
        page = list(wiki.filter(pk__gt=after)[:BRAIN_READ_PAGE])
        if not page:
            return result
        done, passages, read = passage_reader.read_ahead(page, deadline)
        result["notes"] += done
        result["passages"] += passages
        result["read"] += read
        if done < len(page):
            # The slice's time ran out inside this page: the next slice starts at the note it did not finish.
            after = page[done - 1].pk if done else after
            with transaction.atomic():
                async_task(
                    READ_BRAIN_TASK, after, task_name=f"read-brain-passages-after-{after}", group="brain-passages"
                )
            result["next_after"] = after
            return result
        after = page[-1].pk


def resume_passage_reading() -> None:
    """At `serve`'s start: read ahead the passages of the wiki notes that have none stored (`read_brain_passages`),
    unless such a task already waits in the queue. The setting alone decides here: serve's own process never loads
    the encoder (the task says when its weights are missing)."""
    if settings.BRAIN_PASSAGE_READER == "off":
        return
    if any(message.func() == READ_BRAIN_TASK for message in OrmQ.objects.filter(lock__lte=timezone.now())):
        return
    with transaction.atomic():
        async_task(READ_BRAIN_TASK, 0, task_name="read-brain-passages", group="brain-passages")


def refresh_similar_notes(*note_ids: int, max_seconds: float | None = EMBED_SLICE_SECONDS) -> SimilarRanking:
    """Rank the notes most like each raw note of `note_ids` after they changed, so their pages and the
    queue read the result. Notes that are no longer raw (or gone) are skipped.

    Bounded like an embedding slice (each ranking is a search, which embeds its query): the notes not reached
    within `max_seconds` are queued as a task of their own, behind whatever else waits in the queue.
    """
    result: SimilarRanking = {"ranked": 0, "skipped": 0, "failed": 0, "similar": 0, "duplicates": 0, "queued": 0}
    notes = Note.objects.filter(pk__in=note_ids, status=NoteStatus.RAW).in_bulk()
    deadline = time.monotonic() + max_seconds if max_seconds is not None else None
    for index, note_id in enumerate(note_ids):
        if deadline is not None and time.monotonic() >= deadline:
            rest = [pk for pk in note_ids[index:] if pk in notes]
            if rest:
                queue = settings.EMBED_QUEUE if settings.BRAIN_EMBEDDER != "off" else None
                with transaction.atomic():
                    async_task(
                        SIMILAR_TASK,
                        *rest,
                        task_name=f"similar-notes-{rest[0]}-and-{len(rest) - 1}-more",
                        group="brain-similar",
                        cluster=queue,
                    )
                result["queued"] = len(rest)
            break
        note = notes.get(note_id)
        if note is None:
            result["skipped"] += 1
            continue
        try:
            found = similar.refresh(note)
        except Exception:  # noqa: BLE001 — one note's fault costs its ranking (its page ranks it later), not the batch's
            logger.exception("could not rank the similar notes of note %s", note_id)
            result["failed"] += 1
            continue
        result["ranked"] += 1
        result["similar"] += len(found)
        result["duplicates"] += sum(item.duplicate for item in found)
    return result


def verify_projects() -> Mapping[str, RecheckOutcomeJson]:
    """Every project with a repository: fetch, and when its branch head moved, re-verify the notes anchored
    to the files that changed (brain.actions.do_sync_project). One unreadable project never stops the others."""
    results: dict[str, RecheckOutcomeJson] = {}
    for project in Project.objects.exclude(repo=""):
        results[project.name] = do_sync_project(project).as_dict()
    return results


def verify_project(project_id: int) -> RecheckOutcomeJson | Skipped:
    """One project (queued by a session's hook when it may have moved the branch head)."""
    project = Project.objects.filter(pk=project_id).exclude(repo="").first()
    if project is None:
        return {"skipped": "no such project with a repository"}
    return do_sync_project(project).as_dict()


def run_note_check(note_id: int) -> NoteCheckJson | Skipped:
    """A wiki note's `check:` at its project's synced head (queued when a reviewer gives a note a check)."""
    note = Note.objects.filter(pk=note_id).select_related("project").first()
    if note is None or note.project is None or not note.project.last_synced_commit:
        return {"skipped": "no such note with a synced project"}
    run = do_run_note_check(note, note.project.last_synced_commit)
    if run is None:
        return {"skipped": "no check to run (none, not a wiki note, unreadable repository or no runner)"}
    return {"slug": note.slug, "passed": run.passed, "commit": run.commit, "seconds": round(run.seconds, 3)}
