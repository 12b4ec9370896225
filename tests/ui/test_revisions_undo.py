"""Problem 4: nothing a reviewer does is permanent by accident.

Every change writes a revision (who, when, before/after); undo of promote,
merge and reject brings back the exact previous state, in the database and
in the BRAIN_DIR mirror on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.forms.models import model_to_dict

from brain.folder import sync_mirror
from brain.models import MirrorFile, Note, NoteRevision, NoteStatus
from tests.ui.conftest import make_raw_note, make_wiki_note

pytestmark = pytest.mark.django_db

# The row itself, minus what every save moves on (the version counter and updated_at).
VOLATILE = {"updated_at", "version"}


def note_rows() -> dict[int, dict]:
    return {
        note.pk: {k: v for k, v in model_to_dict(note).items() if k not in VOLATILE} | {"created_at": note.created_at}
        for note in Note.objects.order_by("pk")
    }


def files_on_disk(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


@pytest.fixture
def brain_dir(tmp_path, settings) -> Path:
    settings.BRAIN_DIR = str(tmp_path / "brain")
    return Path(settings.BRAIN_DIR)


def _undo_last(client, note: Note):
    group = NoteRevision.objects.filter(note=note).exclude(action="undo").order_by("-id").first().group
    return client.post(f"/review/undo/{group}/")


def test_undo_of_promote_restores_the_note_row_and_the_files_on_disk(staff_client, brain_dir):
    note = make_raw_note(title="Retry flaky uploads", body="Use [[backoff]] with jitter.")
    make_wiki_note(title="Backoff", body="Exponential backoff.", wing="concepts")
    sync_mirror(brain_dir)
    rows, disk = note_rows(), files_on_disk(brain_dir)
    assert f"raw/{note.slug}.md" in disk

    response = staff_client.post(
        f"/review/{note.pk}/promote/",
        {
            "wing": "ops",
            "hall": "uploads",
            "title": "Retries for uploads",
            "slug": "retries-for-uploads",
            "body": "Use [[backoff]] with jitter, 3 tries.",
            "version": note.version,
        },
    )
    assert response.status_code == 302
    sync_mirror(brain_dir)
    assert "wiki/ops/uploads/retries-for-uploads.md" in files_on_disk(brain_dir)
    assert note_rows() != rows

    response = _undo_last(staff_client, Note.objects.get(pk=note.pk))
    assert response.status_code == 302
    sync_mirror(brain_dir)
    assert note_rows() == rows
    assert files_on_disk(brain_dir) == disk
    assert Note.objects.get(pk=note.pk).version == note.version + 2  # promote, then its undo


def test_undo_of_reject_restores_the_note_and_its_file(staff_client, brain_dir):
    note = make_raw_note(title="Vague", body="Something, maybe.")
    sync_mirror(brain_dir)
    rows, disk = note_rows(), files_on_disk(brain_dir)

    assert staff_client.post(f"/review/{note.pk}/reject/", {"reason": "too vague"}).status_code == 302
    sync_mirror(brain_dir)
    assert f"raw/{note.slug}.md" not in files_on_disk(brain_dir)

    _undo_last(staff_client, Note.objects.get(pk=note.pk))
    sync_mirror(brain_dir)
    assert note_rows() == rows
    assert files_on_disk(brain_dir) == disk
    assert Note.objects.get(pk=note.pk).status == NoteStatus.RAW


def test_undo_of_merge_restores_both_notes_and_both_files(staff_client, brain_dir):
    target = make_wiki_note(title="Uploads", body="Uploads go to S3.", wing="concepts")
    raw = make_raw_note(title="Upload retries", body="Retry three times.")
    sync_mirror(brain_dir)
    rows, disk = note_rows(), files_on_disk(brain_dir)

    response = staff_client.post(
        f"/review/{raw.pk}/merge/",
        {
            "into": target.slug,
            "body": "Uploads go to S3.\n\n## Upload retries\n\nRetry three times.\n",
            "version": target.version,
        },
    )
    assert response.status_code == 302
    target.refresh_from_db()
    assert target.provenance["merged_from"] == [{"slug": raw.slug, "id": raw.pk, "title": raw.title}]
    sync_mirror(brain_dir)
    assert files_on_disk(brain_dir) != disk

    # One undo for the whole merge: the target's text and the raw note both come back.
    revisions = NoteRevision.objects.filter(action__in=["merge", "merged"])
    assert revisions.count() == 2 and len({r.group for r in revisions}) == 1
    assert staff_client.post(f"/review/undo/{revisions[0].group}/").status_code == 302
    sync_mirror(brain_dir)
    assert note_rows() == rows
    assert files_on_disk(brain_dir) == disk
    assert set(MirrorFile.objects.values_list("path", flat=True)) == set(disk)


def test_every_action_writes_a_revision_with_who_when_and_before_after(staff_client, staff_user):
    note = make_raw_note(title="A", body="one")
    staff_client.post(
        f"/review/{note.pk}/promote/",
        {
            "wing": "concepts",
            "title": "A",
            "slug": note.slug,
            "body": "one",
            "version": note.version,
        },
    )
    note.refresh_from_db()
    staff_client.post(f"/review/{note.pk}/edit/", {"title": "A", "body": "two", "version": note.version})
    note.refresh_from_db()
    staff_client.post(
        f"/review/{note.pk}/refile/", {"wing": "ops", "hall": "", "slug": note.slug, "version": note.version}
    )
    note.refresh_from_db()
    staff_client.post(f"/review/{note.pk}/demote/", {"reason": "not ready", "version": note.version})
    note.refresh_from_db()
    actions = list(note.revisions.order_by("id").values_list("action", flat=True))
    assert actions == ["promote", "edit", "refile", "demote"]
    edit = note.revisions.get(action="edit")
    assert edit.user == staff_user and edit.created_at is not None
    assert (edit.before["body"], edit.after["body"]) == ("one", "two")
    assert edit.changed_fields() == ["body", "content_hash", "provenance"]
    assert note.status == NoteStatus.RAW and note.review_note == "not ready"

    page = staff_client.get(f"/review/{note.pk}/")
    history = page.content.decode()
    assert 'id="history"' in history
    for action in ("promote", "edit", "re-file", "demote to raw"):
        assert action in history
    assert '<del class="diff">one</del>' in history or "-one" in history  # the edit's diff is on the page


def test_undo_is_refused_when_the_note_changed_afterwards_and_writes_nothing(staff_client):
    note = make_raw_note(title="B", body="first")
    staff_client.post(
        f"/review/{note.pk}/promote/",
        {
            "wing": "concepts",
            "title": "B",
            "slug": note.slug,
            "body": "first",
            "version": note.version,
        },
    )
    promote = NoteRevision.objects.get(note=note, action="promote")
    note.refresh_from_db()
    staff_client.post(f"/review/{note.pk}/edit/", {"title": "B", "body": "second", "version": note.version})
    note.refresh_from_db()
    before = note_rows()

    response = staff_client.post(f"/review/undo/{promote.group}/", follow=True)
    assert "undo the later changes first" in response.content.decode()
    assert note_rows() == before
    assert not NoteRevision.objects.filter(action="undo").exists()


def test_undo_needs_staff_and_post(reader_client, staff_client):
    note = make_raw_note()
    staff_client.post(f"/review/{note.pk}/reject/", {"reason": "no"})
    group = NoteRevision.objects.get(note=note).group
    assert reader_client.post(f"/review/undo/{group}/").status_code == 403
    assert staff_client.get(f"/review/undo/{group}/").status_code == 405
    assert Note.objects.get(pk=note.pk).status == NoteStatus.REJECTED


def test_the_success_message_offers_undo(staff_client):
    note = make_raw_note()
    response = staff_client.post(f"/review/{note.pk}/reject/", {"reason": "dup"}, follow=True)
    group = NoteRevision.objects.get(note=note).group
    assert f'action="/review/undo/{group}/"' in response.content.decode()


def test_one_undo_takes_back_a_whole_bulk_action(staff_client, brain_dir):
    notes = [make_raw_note() for _ in range(3)]
    sync_mirror(brain_dir)
    rows, disk = note_rows(), files_on_disk(brain_dir)
    response = staff_client.post(
        "/review/bulk/",
        {
            "action": "promote",
            "wing": "ops",
            "notes": [n.pk for n in notes],
            "next_query": "",
        },
        follow=True,
    )
    page = response.content.decode()
    group = NoteRevision.objects.get(note=notes[0]).group
    assert NoteRevision.objects.filter(group=group).count() == 3
    assert f'action="/review/undo/{group}/"' in page
    sync_mirror(brain_dir)
    assert staff_client.post(f"/review/undo/{group}/").status_code == 302
    sync_mirror(brain_dir)
    assert note_rows() == rows and files_on_disk(brain_dir) == disk
