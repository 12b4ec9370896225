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


# --- 3. duplicates judged by meaning too, from the same hybrid search ---------------------

FACT = ("Migrations first", "Run migrations before starting the web server, or the app crashes on missing tables.")
PARAPHRASE = ("Schema before server",
              "Start the server only after the database schema is up to date; otherwise missing tables make it fail.")


@pytest.fixture
def local_embedder(settings):
    settings.BRAIN_EMBEDDER = "local"
    settings.BRAIN_DUPLICATE_MEANING_THRESHOLD = 0.90


def _embed_all() -> None:
    from brain.embedding_sync import sync_embeddings
    from hyperguild.lib.embedders import LocalEmbedder

    result = sync_embeddings(LocalEmbedder())
    assert result.errors == [] and result.pending == 0


def test_a_paraphrased_note_is_flagged_as_a_likely_duplicate_in_the_queue_and_on_promote(
    staff_client, local_embedder
):
    from brain.tasks import refresh_similar_notes
    from hyperguild.lib.diff import similarity

    wiki = make_wiki_note(title=FACT[0], body=FACT[1], slug="migrations-first")
    make_wiki_note(title="Pruning tomatoes", body="Pinch out the side shoots of cordon tomatoes every week.")
    raw = make_raw_note(title=PARAPHRASE[0], body=PARAPHRASE[1])
    assert similarity(FACT[1], PARAPHRASE[1]) < 0.5  # few shared words: the old check let it through
    _embed_all()
    assert refresh_similar_notes(raw.pk)["duplicates"] == 1  # the background task after the write

    queue = staff_client.get("/review/").content.decode()
    assert "likely duplicate: Migrations first" in queue

    page = staff_client.get(f"/review/{raw.pk}/").content.decode()
    assert 'id="duplicate-warning"' in page
    assert f'/review/{raw.pk}/merge/preview/?into=migrations-first' in page  # one click to the merge

    refused = staff_client.post(f"/review/{raw.pk}/promote/", {
        "wing": "concepts", "title": raw.title, "slug": raw.slug, "body": raw.body, "version": raw.version,
    })
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "Migrations first" in text and "same meaning" in text
    assert text.count("Not promoted: merge it into that note") == 1  # said once, not repeated
    raw.refresh_from_db()
    assert raw.status == NoteStatus.RAW
    confirmed = staff_client.post(f"/review/{raw.pk}/promote/", {
        "wing": "concepts", "title": raw.title, "slug": raw.slug, "body": raw.body, "version": raw.version,
        "confirm_duplicate": "1",
    })
    assert confirmed.status_code == 302
    assert Note.objects.get(pk=wiki.pk).status == NoteStatus.WIKI


def test_an_unrelated_note_is_not_flagged_by_meaning(staff_client, local_embedder):
    from brain import similar

    make_wiki_note(title=FACT[0], body=FACT[1])
    raw = make_raw_note(title="Tomatoes", body="Pinch out the side shoots of cordon tomatoes every week in summer.")
    _embed_all()
    assert [item for item in similar.refresh(raw) if item.duplicate] == []


def test_the_note_page_reads_the_stored_ranking_and_never_searches_per_view(staff_client, monkeypatch):
    from brain import similar

    make_wiki_note(title="Kafka lag", body="Alert when kafka consumer lag grows for five minutes.")
    raw = make_raw_note(title="Kafka lag alerts", body="Alert when kafka consumer lag grows for five minutes.")
    first = staff_client.get(f"/review/{raw.pk}/").content.decode()
    assert f'data-load-url="/review/{raw.pk}/similar/"' in first  # nothing stored yet: the panel loads later
    panel = staff_client.get(f"/review/{raw.pk}/similar/").content.decode()
    assert "Kafka lag" in panel and "likely duplicate" in panel

    def no_search(*args, **kwargs):
        raise AssertionError("the note page searched and diffed on a view")

    monkeypatch.setattr(similar, "find_similar", no_search)
    page = staff_client.get(f"/review/{raw.pk}/").content.decode()
    assert "data-load-url" not in page and "100% same words" in page
    # The ranking belongs to a text: after an edit it is stale, and the page defers the panel again.
    monkeypatch.undo()
    staff_client.post(f"/review/{raw.pk}/edit/", {"title": raw.title, "body": "Something else.", "version": 1})
    assert "data-load-url" in staff_client.get(f"/review/{raw.pk}/").content.decode()
