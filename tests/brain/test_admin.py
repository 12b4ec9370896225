"""Admin bulk actions go through the brain actions."""

from __future__ import annotations

import pytest
from django.urls import reverse

from brain.actions import do_ingest_note, do_write_raw_note
from brain.models import Note, NoteStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser("boss", password="pw")


def run_action(client, action: str, notes) -> None:
    response = client.post(
        reverse("admin:brain_note_changelist"),
        {"action": action, "_selected_action": [note.pk for note in notes]},
        follow=True,
    )
    assert response.status_code == 200


def test_bulk_promote_uses_the_frontmatter_wing_and_records_the_reviewer(client, admin_user):
    client.force_login(admin_user)
    ready = do_write_raw_note(title="Ready", body="x", frontmatter={"wing": "concepts", "hall": "ops"})
    no_wing = do_write_raw_note(title="No wing", body="y")
    run_action(client, "promote_notes", [ready, no_wing])
    ready.refresh_from_db()
    assert (ready.status, ready.wing, ready.hall, ready.reviewed_by) == (NoteStatus.WIKI, "concepts", "ops", admin_user)
    assert Note.objects.get(pk=no_wing.pk).status == NoteStatus.RAW


def test_bulk_reject_and_archive(client, admin_user):
    client.force_login(admin_user)
    raw = do_write_raw_note(title="Nope", body="x")
    wiki = do_ingest_note(title="Old", body="y", wing="concepts")
    run_action(client, "reject_notes", [raw])
    run_action(client, "archive_notes", [wiki])
    assert Note.objects.get(pk=raw.pk).status == NoteStatus.REJECTED
    assert "admin" in Note.objects.get(pk=raw.pk).review_note
    assert Note.objects.get(pk=wiki.pk).status == NoteStatus.ARCHIVED


def test_the_admin_lists_and_searches_notes_and_links(client, admin_user):
    client.force_login(admin_user)
    do_write_raw_note(title="Findable", body="[[elsewhere]]")
    assert b"findable" in client.get(reverse("admin:brain_note_changelist"), {"q": "Findable"}).content
    assert b"elsewhere" in client.get(reverse("admin:brain_notelink_changelist")).content


def test_non_staff_cannot_reach_the_note_admin(client, django_user_model):
    user = django_user_model.objects.create_user("plain", password="pw")
    client.force_login(user)
    note = do_write_raw_note(title="Safe", body="x")
    response = client.post(
        reverse("admin:brain_note_changelist"), {"action": "archive_notes", "_selected_action": [note.pk]}
    )
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert Note.objects.get(pk=note.pk).status == NoteStatus.RAW
