"""What a write costs the task queue (issue 34): bulk paths queue one task per batch, never one per note,
and a write's enqueue opens no database connection.

These tests need `transaction=True`: the background work is queued once the write's transaction has
committed (`transaction.on_commit`), which never happens inside the test-wide transaction of `db`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db.backends.signals import connection_created
from django.test import Client
from django.urls import reverse
from django_q.models import OrmQ

from brain import indexing
from brain.actions import do_write_raw_note
from brain.folder import import_folder, sync_mirror
from brain.models import Note, NoteStatus, SimilarNotes
from brain.tasks import refresh_similar_notes

pytestmark = pytest.mark.django_db(transaction=True)

BACKGROUND_TASKS = {indexing.SIMILAR_TASK, indexing.SYNC_NOTE_TASK}


@pytest.fixture(autouse=True)
def _fresh_index():
    from brain import bm25

    bm25.reset()
    yield
    bm25.reset()


@contextlib.contextmanager
def counting_connections() -> Iterator[list]:
    """Every database connection opened inside the block (Django's `connection_created` signal)."""
    opened: list = []

    def count(sender, connection, **kwargs) -> None:
        opened.append(connection.alias)

    connection_created.connect(count, weak=False)
    try:
        yield opened
    finally:
        connection_created.disconnect(count)


def write_brain(root: Path, count: int) -> None:
    """`count` notes, a third raw, the others in the wiki under two wings."""
    for i in range(count):
        rel = f"raw/idea-{i}.md" if i % 3 == 0 else f"wiki/{('concepts', 'sources')[i % 2]}/topic/note-{i}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\ntitle: Note {i}\n---\nText about subject {i % 17} and [[note-{(i * 7) % count}]].\n",
            encoding="utf-8",
        )


def queued() -> list[dict]:
    return [row.task for row in OrmQ.objects.all() if row.task["func"] in BACKGROUND_TASKS]


def queued_ids() -> list[int]:
    return sorted(note_id for task in queued() for note_id in task["args"])


@pytest.mark.parametrize("embedder", ["off", "local"])
def test_importing_200_notes_opens_at_most_5_connections_and_queues_at_most_2_tasks(tmp_path, settings, embedder):
    settings.BRAIN_EMBEDDER = embedder
    write_brain(tmp_path, 200)
    Note.objects.exists()  # the test's own connection is open before the import starts
    with counting_connections() as opened:
        summary = import_folder(tmp_path)
    assert summary.added == 200 and not summary.errors
    assert len(opened) <= 5, f"the import opened {len(opened)} database connections"
    tasks = queued()
    assert 1 <= len(tasks) <= 2, f"the import queued {len(tasks)} tasks"
    expected = indexing.SYNC_NOTE_TASK if embedder != "off" else indexing.SIMILAR_TASK
    assert {task["func"] for task in tasks} == {expected}
    # Beside each, one task reads the same notes' passages ahead for brain_answer (issue 45): per batch, not per note.
    reads = [row.task for row in OrmQ.objects.all() if row.task["func"] == indexing.READ_TASK]
    assert [sorted(task["args"]) for task in reads] == [sorted(task["args"]) for task in tasks]


def test_the_tasks_an_import_queues_name_every_imported_note_once(tmp_path, settings):
    settings.BRAIN_EMBEDDER = "off"
    write_brain(tmp_path, 200)
    import_folder(tmp_path)
    assert queued_ids() == sorted(Note.objects.values_list("pk", flat=True))


def test_a_large_import_queues_one_task_per_batch_of_notes(tmp_path, settings, monkeypatch):
    settings.BRAIN_EMBEDDER = "off"
    monkeypatch.setattr(indexing, "BULK_BATCH", 20)  # the rule at a size the test imports in a second
    write_brain(tmp_path, 47)
    import_folder(tmp_path)
    tasks = queued()
    assert len(tasks) == 3  # two full batches, queued while the import runs, and the rest at its end
    assert sorted(len(task["args"]) for task in tasks) == [7, 20, 20]
    assert queued_ids() == sorted(Note.objects.values_list("pk", flat=True))


def test_importing_the_same_folder_again_queues_nothing(tmp_path, settings):
    settings.BRAIN_EMBEDDER = "off"
    write_brain(tmp_path, 30)
    import_folder(tmp_path)
    OrmQ.objects.all().delete()
    assert import_folder(tmp_path).unchanged == 30
    assert queued() == []


def test_a_mirror_round_of_new_files_queues_one_task_and_opens_no_connection(tmp_path, settings):
    settings.BRAIN_EMBEDDER = "off"
    write_brain(tmp_path, 60)
    Note.objects.exists()
    with counting_connections() as opened:
        summary = sync_mirror(tmp_path)
    assert summary.added == 60 and not summary.errors
    assert len(queued()) == 1 and opened == []
    assert queued_ids() == sorted(Note.objects.values_list("pk", flat=True))


def test_a_single_write_queues_its_task_on_the_connection_it_already_holds(settings):
    settings.BRAIN_EMBEDDER = "off"
    Note.objects.exists()
    with counting_connections() as opened:
        note = do_write_raw_note(title="One write", body="Queued on the connection the write used.")
        do_write_raw_note(title="Another write", body="And the next write still has it.")
    assert opened == []  # django-q2's broker would close the connection before an enqueue outside a transaction
    [first, second] = sorted(queued(), key=lambda task: task["args"])
    assert first["func"] == indexing.SIMILAR_TASK and first["args"] == (note.pk,)


def test_a_write_that_rolls_back_queues_nothing(settings):
    from django.db import transaction

    settings.BRAIN_EMBEDDER = "off"
    with pytest.raises(RuntimeError), transaction.atomic():
        do_write_raw_note(title="Never committed", body="Rolled back with its caller.")
        raise RuntimeError("the caller fails")
    assert queued() == [] and not Note.objects.exists()


def test_writes_in_a_bulk_block_are_queued_together_when_it_ends(settings):
    settings.BRAIN_EMBEDDER = "off"
    with indexing.notes_changed_in_bulk():
        notes = [do_write_raw_note(title=f"Bulk {i}", body=f"Body {i}.") for i in range(5)]
        assert queued() == []  # nothing yet: the block queues its notes when it ends
    [task] = queued()
    assert task["args"] == tuple(note.pk for note in notes)


def test_a_bulk_block_that_fails_still_queues_the_notes_written_before_the_failure(settings):
    settings.BRAIN_EMBEDDER = "off"
    with pytest.raises(RuntimeError), indexing.notes_changed_in_bulk():
        note = do_write_raw_note(title="Committed before the failure", body="Its ranking is still due.")
        raise RuntimeError("the bulk path stops half way")
    assert queued_ids() == [note.pk]


def test_bulk_promote_from_the_review_queue_queues_one_task(settings):
    settings.BRAIN_EMBEDDER = "off"
    reviewer = get_user_model().objects.create_user("reviewer", password="pw-reviewer-123", is_staff=True)
    client = Client()
    client.force_login(reviewer)
    notes = [do_write_raw_note(title=f"Queue note {i}", body=f"Reviewed in bulk {i}.") for i in range(12)]
    OrmQ.objects.all().delete()
    response = client.post(
        reverse("brain-review-bulk"), {"action": "promote", "notes": [n.pk for n in notes[:8]], "wing": "bulk"}
    )
    assert response.status_code == 302
    assert Note.objects.filter(status=NoteStatus.WIKI).count() == 8
    assert len(queued()) == 1 and queued_ids() == sorted(n.pk for n in notes[:8])
    OrmQ.objects.all().delete()
    client.post(
        reverse("brain-review-bulk"), {"action": "reject", "notes": [n.pk for n in notes[8:]], "reason": "noise"}
    )
    assert len(queued()) == 1 and queued_ids() == sorted(n.pk for n in notes[8:])


def test_the_similar_notes_task_ranks_every_raw_note_it_is_given(settings):
    settings.BRAIN_EMBEDDER = "off"
    raw = [
        do_write_raw_note(title=f"Event loop idea {i}", body="Pin the event loop policy in tests.") for i in range(3)
    ]
    result = refresh_similar_notes(*[n.pk for n in raw], 999_999)
    assert result["ranked"] == 3 and result["skipped"] == 1
    assert set(SimilarNotes.objects.values_list("note_id", flat=True)) == {n.pk for n in raw}
