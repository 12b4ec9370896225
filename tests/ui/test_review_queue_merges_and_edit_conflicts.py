"""The review queue and note pages: merges and edits over a newer version, the merge preview, bulk actions
and paging, queue navigation, similar notes, wikilinks (issue 19: each test reproduced one problem)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from brain.models import Note, NoteRevision, NoteStatus
from tests.ui.conftest import make_raw_note, make_wiki_note

pytestmark = pytest.mark.django_db

QUEUE = "/review/"


def _ticked(page: str) -> set[str]:
    return set(re.findall(r'name="notes" value="(\d+)"[^>]*checked', page))


# --- 2. safe merges and edits ----------------------------------------------------------------


def test_a_merge_saved_over_a_newer_target_is_refused_and_both_texts_are_shown(staff_client):
    target = make_wiki_note(title="Uploads", body="Uploads go to S3.")
    first, second = make_raw_note(title="Retries", body="Retry 3x."), make_raw_note(title="Sizes", body="Max 5 GB.")
    seen_version = target.version  # both previews were opened now

    ok = staff_client.post(
        f"/review/{first.pk}/merge/",
        {
            "into": target.slug,
            "body": "Uploads go to S3.\n\n## Retries\n\nRetry 3x.\n",
            "version": seen_version,
        },
    )
    assert ok.status_code == 302
    late = staff_client.post(
        f"/review/{second.pk}/merge/",
        {
            "into": target.slug,
            "body": "Uploads go to S3.\n\n## Sizes\n\nMax 5 GB.\n",
            "version": seen_version,
        },
    )
    assert late.status_code == 409
    page = late.content.decode()
    assert "changed while you were merging" in page
    assert "Retry 3x." in page and "Max 5 GB." in page  # what is saved, and what the reviewer wrote
    assert '<ins class="diff">Max 5 GB.</ins>' in page and '<del class="diff">Retry 3x.</del>' in page
    target.refresh_from_db()
    second.refresh_from_db()
    assert "Retry 3x." in target.body and "Max 5 GB." not in target.body
    assert second.status == NoteStatus.RAW  # not archived as "merged" while its text is nowhere
    assert [item["slug"] for item in target.provenance["merged_from"]] == [first.slug]
    assert f'name="version" value="{target.version}"' in page  # saving again is a deliberate choice


def test_an_edit_over_a_newer_version_is_a_conflict_that_keeps_the_text(staff_client):
    note = make_wiki_note(title="Locks", body="Use advisory locks.")
    staff_client.post(
        f"/review/{note.pk}/edit/", {"title": "Locks", "body": "Use pg advisory locks.", "version": note.version}
    )
    response = staff_client.post(
        f"/review/{note.pk}/edit/",
        {
            "title": "Locks",
            "body": "Use advisory locks, with a timeout.",
            "version": note.version,
        },
    )
    assert response.status_code == 409
    page = response.content.decode()
    assert "Use pg advisory locks." in page and "Use advisory locks, with a timeout." in page
    note.refresh_from_db()
    assert note.body == "Use pg advisory locks." and note.revisions.filter(action="edit").count() == 1


def test_the_merge_preview_renders_wikilinks_and_diffs_against_the_target(staff_client):
    target = make_wiki_note(title="Uploads", body="Uploads go to S3.")
    make_wiki_note(title="Backoff", body="Exponential.")
    raw = make_raw_note(title="Retries", body="See [[backoff]] and [[nowhere-yet]].")
    page = staff_client.get(f"/review/{raw.pk}/merge/preview/", {"into": target.slug}).content.decode()
    backoff = Note.objects.get(slug="backoff")
    assert f'<a class="wikilink" href="/review/{backoff.pk}/"' in page
    assert (
        '<a class="wikilink missing"' in page
        and "[[backoff]]" not in page[page.index('id="merge-preview"') : page.index('id="merge-diff"')]
    )
    assert '<ins class="diff">See [[backoff]] and [[nowhere-yet]].</ins>' in page

    live = staff_client.post(f"/review/{raw.pk}/merge/render/", {"into": target.slug, "body": "Only **this** now."})
    assert live.status_code == 200
    data = live.json()
    assert "<strong>this</strong>" in data["html"] and '<del class="diff">Uploads go to S3.</del>' in data["diff"]


# --- 5, 8. triage at scale -------------------------------------------------------------------


def test_a_bulk_reject_without_a_reason_keeps_the_ticks_and_says_why(staff_client):
    notes = [make_raw_note() for _ in range(3)]
    response = staff_client.post(
        "/review/bulk/", {"action": "reject", "notes": [notes[0].pk, notes[2].pk], "next_query": ""}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Rejecting needs a reason" in page
    assert _ticked(page) == {str(notes[0].pk), str(notes[2].pk)}
    assert Note.objects.filter(status=NoteStatus.RAW).count() == 3


def test_the_queue_shows_excerpts_page_sizes_and_sort_orders(staff_client):
    for n in range(60):
        make_raw_note(title=f"Note {n:02d}", body=f"Excerpt text number {n} " + "filler " * 100)
    page = staff_client.get(QUEUE, {"per": "50"}).content.decode()
    assert page.count('name="notes"') == 50
    assert "Excerpt text number 59" in page and "filler " * 40 not in page  # excerpts, cut short
    assert "page 1 of 2" in page and "Last »" in page
    oldest_first = staff_client.get(QUEUE, {"sort": "oldest"}).content.decode()
    assert oldest_first.index("Note 00") < oldest_first.index("Note 01")
    by_title = staff_client.get(QUEUE, {"sort": "title", "per": "200"}).content.decode()
    assert by_title.index("Note 10") < by_title.index("Note 11")


def test_select_all_matching_acts_on_every_page_after_the_count_is_confirmed(staff_client):
    for _ in range(30):
        make_raw_note(source="import")
    keep = make_raw_note(source="mcp")
    page = staff_client.get(QUEUE, {"source": "import"}).content.decode()
    assert 'id="select-all-matching"' in page and "all <b>30</b> notes matching" in page
    # The bulk bar comes before the list, and stays in view.
    assert page.index('id="bulk-bar"') < page.index('<table class="queue"') and "bulk-bar" in page

    wrong = staff_client.post(
        "/review/bulk/",
        {
            "action": "reject",
            "reason": "imported noise",
            "select_all": "1",
            "expected_count": "29",
            "next_query": "source=import",
        },
    )
    assert wrong.status_code == 400 and "matches 30 notes, not 29" in wrong.content.decode()
    assert Note.objects.filter(status=NoteStatus.REJECTED).count() == 0

    done = staff_client.post(
        "/review/bulk/",
        {
            "action": "reject",
            "reason": "imported noise",
            "select_all": "1",
            "expected_count": "30",
            "next_query": "source=import",
        },
    )
    assert done.status_code == 302
    assert Note.objects.filter(status=NoteStatus.REJECTED, source="import").count() == 30
    keep.refresh_from_db()
    assert keep.status == NoteStatus.RAW


def test_a_bulk_action_over_its_ceiling_is_refused_and_changes_nothing(staff_client, monkeypatch):
    # Issue 46: a batch door has a ceiling on work, not only on bytes.
    from brain.views import bulk

    monkeypatch.setattr(bulk, "MAX_BULK_NOTES", 3)
    notes = [make_raw_note(source="import") for _ in range(4)]
    everything = staff_client.post(
        "/review/bulk/",
        {
            "action": "reject",
            "reason": "noise",
            "select_all": "1",
            "expected_count": "4",
            "next_query": "source=import",
        },
    )
    assert everything.status_code == 400 and "one bulk action takes at most 3" in everything.content.decode()
    ticked = staff_client.post("/review/bulk/", {"action": "reject", "reason": "noise", "notes": [n.pk for n in notes]})
    assert ticked.status_code == 400 and "Tick at most 3 notes" in ticked.content.decode()
    assert Note.objects.filter(status=NoteStatus.REJECTED).count() == 0


# --- 6. navigation respects the filter ----------------------------------------------------------


def test_next_and_previous_stay_inside_the_filter_they_came_from(staff_client):
    a = make_raw_note(title="A", source="import")
    make_raw_note(title="B", source="mcp")
    c = make_raw_note(title="C", source="import")
    make_raw_note(title="D", source="mcp")
    queue = staff_client.get(QUEUE, {"source": "import"}).content.decode()
    assert f"/review/{c.pk}/?from=source%3Dimport" in queue

    page = staff_client.get(f"/review/{c.pk}/", {"from": "source=import"}).content.decode()
    assert re.search(rf'id="next-note" href="/review/{a.pk}/\?from=source%3Dimport"', page)
    assert 'id="prev-note"' not in page  # C is the newest import; B and D are not in this filter

    response = staff_client.post(f"/review/{c.pk}/reject/", {"reason": "dup", "from": "source=import"})
    assert response["Location"] == f"/review/{a.pk}/?from=source%3Dimport"


def test_wiki_and_archived_notes_show_no_queue_navigation(staff_client):
    make_raw_note(), make_raw_note()
    wiki = make_wiki_note()
    page = staff_client.get(f"/review/{wiki.pk}/").content.decode()
    assert 'id="next-note"' not in page and 'id="prev-note"' not in page


# --- 9. bulk retitle / reslug ----------------------------------------------------------------------


def test_bulk_promote_can_take_titles_from_headings_and_slugs_from_titles(staff_client):
    first = make_raw_note(title="note-238", body="# Retry uploads with jitter\n\nBody.", slug="imported/note-238")
    second = make_raw_note(title="note-239", body="No heading here.", slug="imported/note-239")
    response = staff_client.post(
        "/review/bulk/",
        {
            "action": "promote",
            "wing": "ops",
            "notes": [first.pk, second.pk],
            "title_from_heading": "1",
            "slug_from_title": "1",
            "next_query": "",
        },
    )
    assert response.status_code == 302
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.title, first.slug, first.path) == (
        "Retry uploads with jitter",
        "retry-uploads-with-jitter",
        "wiki/ops/retry-uploads-with-jitter.md",
    )
    assert (second.title, second.slug) == ("note-239", "note-239")


# --- 10, 13, 14. the note page ------------------------------------------------------------------


def test_wikilinks_render_as_links_and_missing_targets_are_marked(staff_client):
    target = make_wiki_note(title="Backoff", body="Exponential.")
    note = make_wiki_note(
        title="Retries", body="See [[backoff|the backoff note]] and [[not-written-yet]], not `[[code]]`."
    )
    page = staff_client.get(f"/review/{note.pk}/").content.decode()
    body = page[page.index('id="note-body"') : page.index('id="history"')]
    assert (
        f'<a class="wikilink" href="/review/{target.pk}/" title="backoff" rel="noopener noreferrer nofollow">the backoff note</a>'
        in body
    )
    assert 'class="wikilink missing"' in body and "[[not-written-yet]]" not in body
    assert "<code>[[code]]</code>" in body


def test_the_body_shows_once_and_the_actions_come_before_a_long_body(staff_client):
    body = "\n\n".join(f"Paragraph {n} with a unique marker-{n}." for n in range(400))
    note = make_raw_note(title="Long", body=body)
    page = staff_client.get(f"/review/{note.pk}/").content.decode()
    assert page.index('id="actions"') < page.index('id="note-body"')
    # The editable copy is folded away (closed <details>), not a second always-open copy of the body.
    assert re.search(r'<details id="promote-body">\s*<summary', page)
    assert page.count("marker-399") == 3  # rendered once, the folded promote copy, the folded edit copy
    assert re.search(r'<details id="edit-panel">', page)


def test_similar_notes_show_a_score_a_diff_and_promoting_a_near_duplicate_needs_a_confirmation(staff_client):
    wiki = make_wiki_note(title="Retry uploads", body="Retry uploads three times with exponential backoff and jitter.")
    raw = make_raw_note(title="Retry uploads", body="Retry uploads three times with exponential backoff and jitter!")
    from brain.tasks import refresh_similar_notes

    refresh_similar_notes(raw.pk)  # issue 31: ranked in the background after the write, never per view
    page = staff_client.get(f"/review/{raw.pk}/").content.decode()
    assert re.search(
        r'<span class="badge failed">likely duplicate</span>\s*<span class="muted"[^>]*>\d+% same words', page
    )
    assert 'id="duplicate-warning"' in page and f"/review/{wiki.pk}/" in page
    assert f"/merge/preview/?into={wiki.slug}" in page  # the diff is on the merge preview, one click away

    form = {
        "wing": "ops",
        "title": "Retry uploads",
        "slug": "retry-uploads-2",
        "body": raw.body,
        "version": raw.version,
    }
    refused = staff_client.post(f"/review/{raw.pk}/promote/", form)
    assert refused.status_code == 400 and "promote anyway" in refused.content.decode()
    raw.refresh_from_db()
    assert raw.status == NoteStatus.RAW
    assert staff_client.post(f"/review/{raw.pk}/promote/", {**form, "confirm_duplicate": "1"}).status_code == 302
    raw.refresh_from_db()
    assert raw.status == NoteStatus.WIKI


# --- 15, 17. routing JSON and the login page -------------------------------------------------------


def test_the_routing_json_button_works_with_a_browser_session_and_a_token_set(staff_client, settings):
    settings.ROUTING_MCP_TOKEN = "routing-secret"
    page = staff_client.get("/routing/").content.decode()
    href = re.search(r'id="routing-json" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    response = staff_client.get(href)
    assert response.status_code == 200 and "calls" in response.json() and response.json()["window_hours"] == 30 * 24
    assert Client().get(href).status_code == 302  # anonymous: the login page
    assert staff_client.get("/routing/stats").status_code == 401  # the API keeps its token


def test_the_login_page_carries_hyperguild_branding():
    page = Client().get("/admin/login/?next=/review/").content.decode()
    assert "Django administration" not in page and "Django site admin" not in page
    assert "<h1>hyperguild</h1>" in page and 'id="id_username"' in page


# --- 4. edit, re-file and demote need staff and write nothing on bad input ------------------------


def test_refile_and_demote_refuse_bad_input_and_non_staff(staff_client, reader_client):
    note = make_wiki_note()
    assert reader_client.post(f"/review/{note.pk}/demote/", {"version": note.version}).status_code == 403
    bad = staff_client.post(
        f"/review/{note.pk}/refile/", {"wing": "../etc", "slug": note.slug, "version": note.version}
    )
    assert bad.status_code == 400
    note.refresh_from_db()
    assert note.status == NoteStatus.WIKI and not NoteRevision.objects.filter(note=note).exists()


def test_old_notes_keep_their_order_when_paged(staff_client):
    old = make_raw_note(title="Ancient")
    Note.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    page = staff_client.get(QUEUE, {"age": "old"}).content.decode()
    assert "Ancient" in page
