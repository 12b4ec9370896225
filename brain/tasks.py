"""django-q2 tasks of the brain (small functions that call folder logic and actions)."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import connection

from brain.embedding_sync import sync_embeddings as run_sync
from brain.folder import sync_mirror
from hyperguild.lib.embedders import get_embedder

logger = logging.getLogger(__name__)

MIRROR_SCHEDULE = "brain-mirror"
# pg advisory lock key: one mirror round at a time across every worker and replica.
MIRROR_LOCK_KEY = 0x6272_6169_6E00  # "brain\0"
EMBED_SCHEDULE = "brain-embeddings"
INDEX_PRUNE_SCHEDULE = "brain-index-prune"
VERIFY_SCHEDULE = "brain-verify-projects"


def schedules() -> list[tuple[str, str, int]]:
    """Periodic schedules installed by `do_ensure_schedules()`: the mirror runs only with BRAIN_DIR set."""
    wanted: list[tuple[str, str, int]] = [
        (INDEX_PRUNE_SCHEDULE, "brain.tasks.prune_note_changes", 3600),
        (VERIFY_SCHEDULE, "brain.tasks.verify_projects", settings.BRAIN_VERIFY_INTERVAL),
    ]
    if settings.BRAIN_DIR:
        wanted.append((MIRROR_SCHEDULE, "brain.tasks.sync_brain_dir", settings.BRAIN_SYNC_INTERVAL))
    if settings.BRAIN_EMBEDDER != "off":
        wanted.append((EMBED_SCHEDULE, "brain.tasks.sync_embeddings", settings.BRAIN_EMBED_SYNC_INTERVAL))
    return wanted


def sync_brain_dir() -> dict:
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


def sync_embeddings() -> dict:
    """Embed new and changed chunks of every note, drop embeddings of removed ones."""
    embedder = get_embedder()
    if embedder is None:
        return {"skipped": "BRAIN_EMBEDDER is off"}
    return run_sync(embedder).as_dict()


def sync_note_embeddings(note_id: int) -> dict:
    """The same for one note, queued by `brain.indexing.note_changed` right after a write."""
    embedder = get_embedder()
    if embedder is None:
        return {"skipped": "BRAIN_EMBEDDER is off"}
    result = run_sync(embedder, note_ids=[note_id]).as_dict()
    try:
        result["similar"] = refresh_similar_notes(note_id)
    except Exception as exc:  # noqa: BLE001 — the vectors are stored; the note page ranks it on its next view
        logger.warning("could not rank the similar notes of note %s: %s", note_id, exc)
        result["similar"] = {"error": str(exc)}
    return result


def prune_note_changes() -> dict:
    """Hourly: drop BM25 change-log rows older than a day (`brain.actions.do_prune_note_changes`)."""
    from brain.actions import do_prune_note_changes

    return {"deleted": do_prune_note_changes()}


def refresh_similar_notes(note_id: int) -> dict:
    """Rank the notes most like a raw note after it changed, so its page and the queue read the result."""
    from brain import similar
    from brain.models import Note, NoteStatus

    note = Note.objects.filter(pk=note_id, status=NoteStatus.RAW).first()
    if note is None:
        return {"skipped": "not a raw note"}
    found = similar.refresh(note)
    return {"similar": len(found), "duplicates": sum(item.duplicate for item in found)}


def verify_projects() -> dict:
    """Every project with a repository: fetch, and when its branch head moved, re-verify the notes anchored
    to the files that changed (brain.actions.do_sync_project). One unreadable project never stops the others."""
    from brain.actions import do_sync_project
    from brain.models import Project

    results = {}
    for project in Project.objects.exclude(repo=""):
        results[project.name] = do_sync_project(project).as_dict()
    return results


def verify_project(project_id: int) -> dict:
    """One project (queued by a session's hook when it may have moved the branch head)."""
    from brain.actions import do_sync_project
    from brain.models import Project

    project = Project.objects.filter(pk=project_id).exclude(repo="").first()
    if project is None:
        return {"skipped": "no such project with a repository"}
    return do_sync_project(project).as_dict()
