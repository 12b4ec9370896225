"""The raw-note review queue, a note's page and the reviewer's actions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from brain.models import Note, NoteStatus
from sessions.actions import do_log_entry
from tests.ui.conftest import make_raw_note, make_wiki_note

pytestmark = pytest.mark.django_db
QUEUE = "/review/"


def test_the_queue_lists_raw_notes_newest_first_with_counts(staff_client):
    make_raw_note("Older learning"), make_raw_note("Newer learning")
    make_wiki_note("Already in the wiki")
    page = staff_client.get(QUEUE).content.decode()
    assert page.index("Newer learning") < page.index("Older learning")
    assert "Already in the wiki" not in page
    assert 'data-testid="raw-total">2<' in page


def test_the_queue_filters_by_source_session_kind_age_and_words(staff_client):
    make_raw_note("From a retrospective", source="retrospective", session_id="sess-a", frontmatter={"kind": "gotcha"})
    make_raw_note("From the REST API", source="rest", session_id="sess-b", frontmatter={"kind": "decision"})
    old = make_raw_note("An old one", source="rest")
    Note.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))

    def titles(**params):
        page = staff_client.get(QUEUE, params).content.decode()
        return {t for t in ("From a retrospective", "From the REST API", "An old one") if t in page}

    assert titles(source="rest") == {"From the REST API", "An old one"}
    assert titles(session="sess-a") == {"From a retrospective"}
    assert titles(kind="decision") == {"From the REST API"}
    assert titles(age="7d") == {"From a retrospective", "From the REST API"}
    assert titles(age="old") == {"An old one"}
    assert titles(q="retrospective") == {"From a retrospective"}


def test_the_queue_runs_the_same_number_of_queries_for_3_or_40_notes(staff_client, django_assert_max_num_queries):
    for _ in range(3):
        make_raw_note()
    staff_client.get(QUEUE)  # warm the session
    # 8, and since issue 31: the duplicate badges, the project list and the guidelines; issue 38: the re-check badge.
    with django_assert_max_num_queries(12) as few:
        assert staff_client.get(QUEUE).status_code == 200
    for _ in range(37):
        make_raw_note()
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = staff_client.get(QUEUE).content.decode()
    assert "page 1 of 2" in page


def test_the_queue_paginates_and_a_bad_page_number_shows_a_real_page(staff_client):
    for i in range(30):
        make_raw_note(f"Numbered note {i:02d}")
    first = staff_client.get(QUEUE).content.decode()
    second = staff_client.get(QUEUE, {"page": 2}).content.decode()
    assert "Numbered note 29" in first and "Numbered note 29" not in second
    assert "Numbered note 00" in second and "page 2 of 2" in second
    assert staff_client.get(QUEUE, {"page": "zzz"}).status_code == 200


def test_a_note_page_shows_sanitised_markdown_frontmatter_provenance_and_similar_notes(staff_client):
    do_log_entry("sess-42", kind="test_run", status="fail", message="pytest failed: fixture not found")
    do_log_entry("sess-42", kind="test_run", status="pass", message="pytest passed after adding the db mark")
    make_wiki_note("Pytest fixtures and the database", "Fixtures that touch the database need the db mark.")
    note = make_raw_note(
        "Pytest database fixtures",
        "**Fixtures** touching the database need `db`.\n\n<script>window.pwned=1</script>"
        "\n\n[click](javascript:alert(1))",
        frontmatter={"kind": "gotcha", "tags": ["pytest"]},
        session_id="sess-42",
        provenance={"entries": [1, 2], "method": "rules"},
    )
    page = staff_client.get(reverse("brain-note", args=[note.pk])).content.decode()
    article = page[page.index('id="note-body"') : page.index("</article>")]
    assert "<strong>Fixtures</strong>" in article
    assert "<script" not in article and "window.pwned" not in article and "javascript:" not in article
    assert "<script>window.pwned" not in page  # the editable source is escaped text
    assert "gotcha" in page and "&quot;method&quot;: &quot;rules&quot;" in page
    assert reverse("sessions-detail", args=["sess-42"]) + "#entry-1" in page
    assert "pytest failed: fixture not found" in page
    assert "Pytest fixtures and the database" in page  # the similar wiki note


def test_promoting_records_the_reviewer_and_the_note_leaves_the_queue(staff_client, staff_user):
    first, second = make_raw_note("Second in queue"), make_raw_note("First in queue")
    response = staff_client.post(
        reverse("brain-promote", args=[second.pk]),
        {
            "wing": "patterns",
            "hall": "testing",
            "title": "Edited title",
            "slug": "edited-slug",
            "body": "Edited body.",
        },
    )
    assert response.status_code == 302 and response["Location"] == reverse("brain-note", args=[first.pk])
    second.refresh_from_db()
    assert (second.status, second.wing, second.hall, second.title, second.slug, second.body) == (
        "wiki",
        "patterns",
        "testing",
        "Edited title",
        "edited-slug",
        "Edited body.",
    )
    assert second.reviewed_by == staff_user and second.reviewed_at is not None
    assert reverse("brain-note", args=[second.pk]) not in staff_client.get(QUEUE).content.decode()


def test_promoting_with_a_bad_wing_says_why_and_writes_nothing(staff_client):
    note = make_raw_note("Keep me raw")
    response = staff_client.post(
        reverse("brain-promote", args=[note.pk]),
        {
            "wing": "../etc",
            "title": "x",
            "slug": "x",
            "body": "y",
        },
    )
    assert response.status_code == 400
    assert "wing" in response.content.decode()
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW and note.title == "Keep me raw"


def test_rejecting_needs_a_reason_and_records_it(staff_client, staff_user):
    note = make_raw_note()
    assert staff_client.post(reverse("brain-reject", args=[note.pk]), {"reason": "  "}).status_code == 400
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW
    response = staff_client.post(reverse("brain-reject", args=[note.pk]), {"reason": "duplicate of fixtures note"})
    assert response.status_code == 302 and response["Location"] == QUEUE
    note.refresh_from_db()
    assert (note.status, note.review_note, note.reviewed_by) == ("rejected", "duplicate of fixtures note", staff_user)


def test_acting_on_a_note_that_already_left_the_queue_changes_nothing(staff_client):
    note = make_raw_note()
    staff_client.post(reverse("brain-reject", args=[note.pk]), {"reason": "first"})
    response = staff_client.post(
        reverse("brain-promote", args=[note.pk]), {"wing": "w", "title": "t", "slug": "s", "body": "b"}, follow=True
    )
    assert "already rejected" in response.content.decode()
    note.refresh_from_db()
    assert note.status == NoteStatus.REJECTED and note.review_note == "first"


def test_merge_previews_the_combined_text_then_saves_it(staff_client):
    target = make_wiki_note("Fixtures", "Existing text about fixtures.")
    note = make_raw_note("More on fixtures", "New detail: use the db mark.")
    preview = staff_client.get(reverse("brain-merge-preview", args=[note.pk]), {"into": target.slug})
    page = preview.content.decode()
    assert preview.status_code == 200
    assert "Existing text about fixtures." in page and "New detail: use the db mark." in page
    target.refresh_from_db()
    assert target.body == "Existing text about fixtures."  # the preview wrote nothing

    response = staff_client.post(
        reverse("brain-merge", args=[note.pk]), {"into": target.slug, "body": "Existing text.\n\nNew detail, edited."}
    )
    assert response.status_code == 302
    target.refresh_from_db()
    note.refresh_from_db()
    assert target.body == "Existing text.\n\nNew detail, edited." and note.status == NoteStatus.ARCHIVED


def test_merge_into_a_note_that_does_not_exist_is_refused(staff_client):
    note = make_raw_note()
    response = staff_client.post(reverse("brain-merge", args=[note.pk]), {"into": "no-such-note", "body": "x"})
    assert response.status_code == 400 and "no-such-note" in response.content.decode()
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW


def test_bulk_promote_and_bulk_reject_go_through_the_single_actions(staff_client, staff_user):
    a, b, c = make_raw_note(), make_raw_note(), make_raw_note()
    staff_client.post(reverse("brain-review-bulk"), {"action": "promote", "notes": [a.pk, b.pk], "wing": "bulk-wing"})
    staff_client.post(reverse("brain-review-bulk"), {"action": "reject", "notes": [c.pk], "reason": "noise"})
    statuses = dict(Note.objects.filter(pk__in=[a.pk, b.pk, c.pk]).values_list("pk", "status"))
    assert statuses == {a.pk: "wiki", b.pk: "wiki", c.pk: "rejected"}
    assert set(Note.objects.filter(pk__in=[a.pk, b.pk]).values_list("wing", flat=True)) == {"bulk-wing"}
    assert Note.objects.get(pk=c.pk).reviewed_by == staff_user


def test_bulk_reject_without_a_reason_writes_nothing(staff_client):
    a = make_raw_note()
    response = staff_client.post(reverse("brain-review-bulk"), {"action": "reject", "notes": [a.pk]}, follow=True)
    assert "Rejecting needs a reason" in response.content.decode()
    a.refresh_from_db()
    assert a.status == NoteStatus.RAW


def test_search_shows_which_rankers_found_each_hit(staff_client):
    make_wiki_note("Postgres advisory locks", "Use pg_try_advisory_lock for worker slots.")
    page = staff_client.get(reverse("brain-search"), {"q": "advisory lock"}).content.decode()
    assert "Postgres advisory locks" in page and "bm25 #" in page
