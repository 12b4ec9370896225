"""Every state-changing view: anonymous → login page, not staff → 403, no CSRF token → 403; nothing written."""

from __future__ import annotations

import pytest
from django.urls import reverse

from brain.models import Note, NoteStatus
from sessions.models import TrainingExample
from tests.ui.conftest import make_example, make_raw_note, make_wiki_note

pytestmark = pytest.mark.django_db


def _note_actions(note, target):
    return [
        (
            reverse("brain-promote", args=[note.pk]),
            {"wing": "concepts", "hall": "", "title": "T", "slug": "t-slug", "body": "B"},
        ),
        (reverse("brain-reject", args=[note.pk]), {"reason": "duplicate"}),
        (reverse("brain-merge", args=[note.pk]), {"into": target.slug, "body": "merged"}),
        (reverse("brain-review-bulk"), {"action": "reject", "notes": [note.pk], "reason": "noise"}),
        (reverse("brain-review-bulk"), {"action": "promote", "notes": [note.pk], "wing": "concepts"}),
        (reverse("brain-edit", args=[target.pk]), {"title": "T", "body": "edited"}),
        (reverse("brain-refile", args=[target.pk]), {"wing": "other", "slug": target.slug}),
        (reverse("brain-demote", args=[target.pk]), {"reason": "not ready"}),
        (reverse("brain-reopen", args=[note.pk]), {"reason": "again"}),
        (reverse("brain-merge-render", args=[note.pk]), {"into": target.slug, "body": "x"}),
    ]


def _example_actions(example):
    return [
        (reverse("sessions-training-approve", args=[example.pk]), {}),
        (reverse("sessions-training-reject", args=[example.pk]), {"reason": "wrong"}),
        (reverse("sessions-training-swap", args=[example.pk]), {"confirm": "1"}),
        (reverse("sessions-training-undo", args=[example.pk, 0]), {}),
        (
            reverse("sessions-training-edit", args=[example.pk]),
            {"prompt-0-role": "user", "prompt-0-content": "changed"},
        ),
    ]


def _assert_untouched(note, target, example):
    note.refresh_from_db()
    target.refresh_from_db()
    example.refresh_from_db()
    assert note.status == NoteStatus.RAW and note.reviewed_by is None
    assert target.body.startswith("Wiki body")
    assert example.status == TrainingExample.Status.CANDIDATE and example.edits == []
    assert example.chosen[0]["content"].startswith("good answer")
    assert example.prompt[0]["content"].startswith("Write a failing test")
    assert Note.objects.filter(status=NoteStatus.WIKI).count() == 1
    assert (target.status, target.wing, target.version) == (NoteStatus.WIKI, "concepts", 1)


@pytest.fixture
def targets():
    note, target, example = make_raw_note(), make_wiki_note(), make_example("dpo")
    return note, target, example, _note_actions(note, target) + _example_actions(example)


def test_anonymous_users_are_sent_to_the_login_page_and_nothing_is_written(client, targets):
    note, target, example, views = targets
    for url, data in views:
        response = client.post(url, data)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login/?next="), url
    _assert_untouched(note, target, example)


def test_logged_in_users_who_are_not_staff_get_403_and_nothing_is_written(reader_client, targets):
    note, target, example, views = targets
    for url, data in views:
        assert reader_client.post(url, data).status_code == 403, url
    _assert_untouched(note, target, example)


def test_posts_without_a_csrf_token_get_403_and_nothing_is_written(csrf_staff_client, targets):
    note, target, example, views = targets
    for url, data in views:
        response = csrf_staff_client.post(url, data)
        assert response.status_code == 403, url
        assert b"CSRF" in response.content, url
    _assert_untouched(note, target, example)


def test_action_views_refuse_get_with_405_and_write_nothing(staff_client, targets):
    note, target, example, views = targets
    for url, _ in views:
        assert staff_client.get(url).status_code == 405, url
    _assert_untouched(note, target, example)


def test_staff_only_pages_refuse_anonymous_and_non_staff(client, reader_client, targets):
    note, target, *_ = targets
    pages = [
        reverse("brain-merge-preview", args=[note.pk]) + f"?into={target.slug}",
        reverse("sessions-training-export", args=["sft"]),
        reverse("sessions-training-export", args=["dpo"]),
    ]
    for url in pages:
        assert client.get(url)["Location"].startswith("/login/"), url
        assert reader_client.get(url).status_code == 403, url


def test_every_page_needs_a_login(client, targets):
    note, _, example, _ = targets
    pages = [
        reverse("hyperguild-home"),
        reverse("brain-review"),
        reverse("brain-note", args=[note.pk]),
        reverse("brain-search") + "?q=raw",
        reverse("sessions-training"),
        reverse("sessions-training-detail", args=[example.pk]),
        reverse("supervisor-routing"),
        reverse("sessions-list"),
        reverse("sessions-detail", args=["s-1"]),
        reverse("hyperguild-costs"),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url


def test_readers_see_the_pages_without_the_action_forms(reader_client, targets):
    note, _, example, _ = targets
    page = reader_client.get(reverse("brain-note", args=[note.pk])).content.decode()
    assert note.title in page and 'id="promote-form"' not in page and 'id="reject-form"' not in page
    page = reader_client.get(reverse("sessions-training-detail", args=[example.pk])).content.decode()
    assert 'id="approve-form"' not in page and 'id="export-sft"' not in page
