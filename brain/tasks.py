"""django-q2 tasks of the brain (small functions that call folder logic and actions)."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import connection

from brain import similar
from brain.actions import do_prune_note_changes, do_run_note_check, do_sync_project
from brain.embedding_sync import sync_embeddings as run_sync
from brain.folder import sync_mirror
from brain.models import Note, NoteStatus, Project
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


def sync_note_embeddings(*note_ids: int) -> dict:
    """The same for the notes of one write or one batch of a bulk path, queued by `brain.indexing`."""
    embedder = get_embedder()
    if embedder is None:
        return {"skipped": "BRAIN_EMBEDDER is off"}
    result = run_sync(embedder, note_ids=note_ids).as_dict()
    try:
        result["similar"] = refresh_similar_notes(*note_ids)
    except Exception as exc:  # noqa: BLE001 — the vectors are stored; the note page ranks it on its next view
        logger.warning("could not rank the similar notes of %d note(s) from note %s: %s", len(note_ids), note_ids[0], exc)
        result["similar"] = {"error": str(exc)}
    return result


def prune_note_changes() -> dict:
    """Hourly: drop BM25 change-log rows older than a day (`brain.actions.do_prune_note_changes`)."""
    return {"deleted": do_prune_note_changes()}


def refresh_similar_notes(*note_ids: int) -> dict:
    """Rank the notes most like each raw note of `note_ids` after they changed, so their pages and the
    queue read the result. Notes that are no longer raw (or gone) are skipped."""
    result = {"ranked": 0, "skipped": 0, "failed": 0, "similar": 0, "duplicates": 0}
    notes = Note.objects.filter(pk__in=note_ids, status=NoteStatus.RAW).in_bulk()
    for note_id in note_ids:
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


def verify_projects() -> dict:
    """Every project with a repository: fetch, and when its branch head moved, re-verify the notes anchored
    to the files that changed (brain.actions.do_sync_project). One unreadable project never stops the others."""
    results = {}
    for project in Project.objects.exclude(repo=""):
        results[project.name] = do_sync_project(project).as_dict()
    return results


def verify_project(project_id: int) -> dict:
    """One project (queued by a session's hook when it may have moved the branch head)."""
    project = Project.objects.filter(pk=project_id).exclude(repo="").first()
    if project is None:
        return {"skipped": "no such project with a repository"}
    return do_sync_project(project).as_dict()


def run_note_check(note_id: int) -> dict:
    """A wiki note's `check:` at its project's synced head (queued when a reviewer gives a note a check)."""
    note = Note.objects.filter(pk=note_id).select_related("project").first()
    if note is None or note.project is None or not note.project.last_synced_commit:
        return {"skipped": "no such note with a synced project"}
    run = do_run_note_check(note, note.project.last_synced_commit)
    if run is None:
        return {"skipped": "no check to run (none, not a wiki note, unreadable repository or no runner)"}
    return {"slug": note.slug, "passed": run.passed, "commit": run.commit, "seconds": round(run.seconds, 3)}
