"""The review UI's third pass (issue 31): each test reproduces one numbered problem, then shows the fix."""

from __future__ import annotations

import pytest

from brain import actions
from brain.models import Note, NoteRevision, NoteStatus
from tests.ui.conftest import make_raw_note, make_wiki_note

pytestmark = pytest.mark.django_db

MULTILINE = "# Retries\n\nRetry three times.\n\n```python\nfor attempt in range(3):\n    call()\n```\n"


def _changed(note: Note, action: str) -> list[str]:
    revision = note.revisions.filter(action=action).order_by("-id").first()
    return [name for name in revision.changed_fields() if name not in ("content_hash", "provenance", "path")]


# --- 1. one normalisation of text at the actions' door ------------------------------------


def test_a_note_promoted_unchanged_from_the_browser_keeps_its_body_and_history_shows_no_body_change(staff_client):
    note = make_raw_note(title="Retries", body=MULTILINE)
    # A browser sends a textarea's text with CRLF line endings.
    response = staff_client.post(f"/review/{note.pk}/promote/", {
        "wing": "concepts", "hall": "", "title": note.title, "slug": note.slug,
        "body": MULTILINE.replace("\n", "\r\n"), "version": note.version,
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    note.refresh_from_db()
    assert note.status == NoteStatus.WIKI
    assert note.body == MULTILINE
    assert "body" not in _changed(note, NoteRevision.Action.PROMOTE)
    page = staff_client.get(f"/review/{note.pk}/").content.decode()
    assert "changed: body" not in page


@pytest.mark.parametrize("writer", ["write_raw", "ingest", "edit", "merge", "import", "area"])
def test_every_writer_stores_text_with_plain_line_endings(staff_user, writer):
    crlf = "first line\r\nsecond line\rthird line\r\n"
    lf = "first line\nsecond line\nthird line\n"
    if writer == "write_raw":
        note = actions.do_write_raw_note(title="T", body=crlf)
    elif writer == "ingest":
        note = actions.do_ingest_note(title="T", body=crlf, wing="concepts")
    elif writer == "edit":
        note = actions.do_edit_note(make_wiki_note(), body=crlf, user=staff_user)
    elif writer == "merge":
        note = actions.do_merge_note(make_raw_note(), into=make_wiki_note(), reviewer=staff_user, body=crlf)
    elif writer == "import":
        note, _ = actions.do_import_note_file(slug="imported", title="T", body=crlf, frontmatter={}, status="raw",
                                              wing="", hall="", path="raw/imported.md")
    else:
        note, _ = actions.do_import_area_description(wing="concepts", hall="", title="T", body=crlf, frontmatter={},
                                                     path="wiki/concepts/_index.md")
    note.refresh_from_db()
    assert note.body == lf


def test_the_normaliser_drops_a_byte_order_mark_and_composes_characters():
    assert actions.normalise_text("\ufeffcafe\u0301\r\nok") == "caf\u00e9\nok"


def test_an_edit_that_only_changes_line_endings_changes_nothing(staff_client):
    note = make_wiki_note(body=MULTILINE)
    response = staff_client.post(f"/review/{note.pk}/edit/", {
        "title": note.title, "body": MULTILINE.replace("\n", "\r\n"), "version": note.version,
    })
    assert response.status_code == 302
    note.refresh_from_db()
    assert note.version == 1 and not note.revisions.exists()


# --- 2. merges go into wiki notes only --------------------------------------------------


@pytest.mark.parametrize("status", [NoteStatus.REJECTED, NoteStatus.ARCHIVED, NoteStatus.RAW])
def test_merging_into_a_note_that_is_not_in_the_wiki_is_refused_and_nothing_changes(staff_user, status):
    target = make_raw_note(title="Target", body="Target body.")
    if status == NoteStatus.REJECTED:
        actions.do_reject_note(target, reviewer=staff_user, reason="wrong")
    elif status == NoteStatus.ARCHIVED:
        actions.do_archive_note(target, reason="gone")
    raw = make_raw_note(title="Raw", body="Raw body.")
    target.refresh_from_db()
    before = (target.body, target.version, target.status)
    with pytest.raises(actions.BrainInputError, match="only be merged into a wiki note"):
        actions.do_merge_note(raw, into=target, reviewer=staff_user, body="Target body.\n\nRaw body.\n")
    target.refresh_from_db()
    raw.refresh_from_db()
    assert (target.body, target.version, target.status) == before
    assert raw.status == NoteStatus.RAW and raw.version == 1


def test_the_merge_page_refuses_a_rejected_target_with_a_clear_message(staff_client, staff_user):
    target = make_raw_note(title="Old idea", body="Old body.")
    actions.do_reject_note(target, reviewer=staff_user, reason="wrong")
    raw = make_raw_note(title="New", body="New body.")
    preview = staff_client.get(f"/review/{raw.pk}/merge/preview/", {"into": target.slug})
    assert preview.status_code == 400
    assert "is rejected" in preview.content.decode() and "wiki note" in preview.content.decode()
    response = staff_client.post(f"/review/{raw.pk}/merge/", {"into": target.slug, "body": "x", "version": 2})
    assert response.status_code == 400
    raw.refresh_from_db()
    assert raw.status == NoteStatus.RAW


def test_the_note_page_offers_merge_only_into_wiki_notes(staff_client, staff_user):
    rejected = make_raw_note(title="Kafka consumer lag alerts", body="Alert when kafka consumer lag grows.")
    actions.do_reject_note(rejected, reviewer=staff_user, reason="too vague")
    raw = make_raw_note(title="Kafka consumer lag alerts", body="Alert when kafka consumer lag grows fast.")
    page = staff_client.get(f"/review/{raw.pk}/").content.decode()
    assert f"into={rejected.slug}" not in page
