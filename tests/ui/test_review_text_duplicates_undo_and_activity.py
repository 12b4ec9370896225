"""Review pages keep text intact (line endings, merges only into wiki notes), flag duplicates by meaning, undo
reopens, bulk rejects and training decisions, and show activity, guidelines and the curation page (issue 31:
each test reproduced one problem, then shows the fix)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from brain import actions
from brain.models import Note, NoteRevision, NoteStatus
from tests.ui.conftest import make_raw_note, make_wiki_note

pytestmark = pytest.mark.django_db

MULTILINE = "# Retries\n\nRetry three times.\n\n```python\nfor attempt in range(3):\n    call()\n```\n"


def _banner_buttons(page: str) -> list[str]:
    """The labels of the buttons in the messages banner (not the history's own Undo buttons)."""
    return re.findall(r'class="undo-form".*?<button type="submit" class="small">(\w+)</button>', page, re.S)


def _changed(note: Note, action: str) -> list[str]:
    revision = note.revisions.filter(action=action).order_by("-id").first()
    return [name for name in revision.changed_fields() if name not in ("content_hash", "provenance", "path")]


# --- 1. one normalisation of text at the actions' door ------------------------------------


def test_a_note_promoted_unchanged_from_the_browser_keeps_its_body_and_history_shows_no_body_change(staff_client):
    note = make_raw_note(title="Retries", body=MULTILINE)
    # A browser sends a textarea's text with CRLF line endings.
    response = staff_client.post(
        f"/review/{note.pk}/promote/",
        {
            "wing": "concepts",
            "hall": "",
            "title": note.title,
            "slug": note.slug,
            "body": MULTILINE.replace("\n", "\r\n"),
            "version": note.version,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    note.refresh_from_db()
    assert note.status == NoteStatus.WIKI
    assert note.body == MULTILINE
    assert "body" not in _changed(note, NoteRevision.Action.PROMOTE)
    page = staff_client.get(f"/review/{note.pk}/").content.decode()
    changed = re.search(r'<span class="small">changed: ([^<]+)</span>', page).group(1)
    assert "status" in changed and "text" not in changed  # and in a reader's words, not column names


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
        note, _ = actions.do_import_note_file(
            slug="imported",
            title="T",
            body=crlf,
            frontmatter={},
            status="raw",
            wing="",
            hall="",
            path="raw/imported.md",
        )
    else:
        note, _ = actions.do_import_area_description(
            wing="concepts", hall="", title="T", body=crlf, frontmatter={}, path="wiki/concepts/_index.md"
        )
    note.refresh_from_db()
    assert note.body == lf


def test_the_normaliser_drops_a_byte_order_mark_and_composes_characters():
    assert actions.normalise_text("\ufeffcafe\u0301\r\nok") == "caf\u00e9\nok"


def test_an_edit_that_only_changes_line_endings_changes_nothing(staff_client):
    note = make_wiki_note(body=MULTILINE)
    response = staff_client.post(
        f"/review/{note.pk}/edit/",
        {
            "title": note.title,
            "body": MULTILINE.replace("\n", "\r\n"),
            "version": note.version,
        },
    )
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
PARAPHRASE = (
    "Schema before server",
    "Start the server only after the database schema is up to date; otherwise missing tables make it fail.",
)


@pytest.fixture
def local_embedder(settings):
    settings.BRAIN_EMBEDDER = "local"


def _embed_all() -> None:
    from brain.embedding_sync import sync_embeddings
    from hyperguild.lib.embedders import LocalEmbedder

    result = sync_embeddings(LocalEmbedder())
    assert result.errors == [] and result.pending == 0


def test_a_paraphrased_note_is_flagged_as_a_likely_duplicate_in_the_queue_and_on_promote(staff_client, local_embedder):
    from brain.tasks import sync_note_embeddings
    from hyperguild.lib.diffs import similarity

    wiki = make_wiki_note(title=FACT[0], body=FACT[1], slug="migrations-first")
    make_wiki_note(title="Pruning tomatoes", body="Pinch out the side shoots of cordon tomatoes every week.")
    raw = make_raw_note(title=PARAPHRASE[0], body=PARAPHRASE[1])
    assert similarity(FACT[1], PARAPHRASE[1]) < 0.5  # few shared words: the old check let it through
    _embed_all()
    # The background task queued by the write: the note's embedding sync, then the ranking of its neighbours.
    assert sync_note_embeddings(raw.pk)["similar"]["duplicates"] == 1

    queue = staff_client.get("/review/").content.decode()
    assert "likely duplicate: Migrations first" in queue

    page = staff_client.get(f"/review/{raw.pk}/").content.decode()
    assert 'id="duplicate-warning"' in page
    assert f"/review/{raw.pk}/merge/preview/?into=migrations-first" in page  # one click to the merge

    refused = staff_client.post(
        f"/review/{raw.pk}/promote/",
        {
            "wing": "concepts",
            "title": raw.title,
            "slug": raw.slug,
            "body": raw.body,
            "version": raw.version,
        },
    )
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "Migrations first" in text and "same meaning" in text
    assert text.count("Not promoted: merge it into that note") == 1  # said once, not repeated
    raw.refresh_from_db()
    assert raw.status == NoteStatus.RAW
    confirmed = staff_client.post(
        f"/review/{raw.pk}/promote/",
        {
            "wing": "concepts",
            "title": raw.title,
            "slug": raw.slug,
            "body": raw.body,
            "version": raw.version,
            "confirm_duplicate": "1",
        },
    )
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


# --- 5. reopen, undo/redo labels and return paths ----------------------------------------------


@pytest.mark.parametrize("status", [NoteStatus.REJECTED, NoteStatus.ARCHIVED])
def test_a_rejected_or_archived_note_can_be_reopened_and_the_reopen_undone(staff_client, staff_user, status):
    note = make_raw_note(title="Second look", body="Worth another look.")
    if status == NoteStatus.REJECTED:
        actions.do_reject_note(note, reviewer=staff_user, reason="too vague")
    else:
        actions.do_archive_note(note, reason="old")
    note.refresh_from_db()
    page = staff_client.get(f"/review/{note.pk}/").content.decode()
    assert 'id="reopen-form"' in page
    response = staff_client.post(
        f"/review/{note.pk}/reopen/", {"reason": "new evidence", "version": note.version}, follow=True
    )
    note.refresh_from_db()
    assert (note.status, note.path, note.reviewed_by) == (NoteStatus.RAW, f"raw/{note.slug}.md", None)
    assert note.revisions.order_by("-id").first().action == NoteRevision.Action.REOPEN
    page = response.content.decode()
    assert "Reopened" in page and _banner_buttons(page) == ["Undo"]
    assert note in Note.objects.raw_queue()

    undo = note.revisions.order_by("-id").first()
    response = staff_client.post(f"/review/undo/{undo.group}/", follow=True)
    note.refresh_from_db()
    assert note.status == status
    assert _banner_buttons(response.content.decode()) == ["Redo"]  # not a second "Undo"
    redo = note.revisions.order_by("-id").first()
    response = staff_client.post(f"/review/undo/{redo.group}/", follow=True)
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW
    page = response.content.decode()
    assert "Redid the change" in page and _banner_buttons(page) == ["Undo"]  # a redo can be undone again


def test_reopening_a_raw_or_wiki_note_is_refused(staff_user):
    with pytest.raises(actions.BrainInputError, match="only rejected or archived notes can be reopened"):
        actions.do_reopen_note(make_raw_note(), user=staff_user)
    with pytest.raises(actions.BrainInputError, match="only rejected or archived notes can be reopened"):
        actions.do_reopen_note(make_wiki_note(), user=staff_user)


def test_undoing_a_bulk_reject_returns_to_the_filtered_queue(staff_client):
    notes = [make_raw_note(source="noisy") for _ in range(3)]
    make_raw_note(source="good")
    response = staff_client.post(
        "/review/bulk/",
        {
            "action": "reject",
            "reason": "noise",
            "notes": [n.pk for n in notes],
            "next_query": "source=noisy",
        },
        follow=True,
    )
    page = response.content.decode()
    assert "Rejected 3 notes." in page
    match = re.search(r'action="(/review/undo/[0-9a-f-]+/)"', page)
    undone = staff_client.post(match.group(1), {"next": "/review/?source=noisy"})
    assert undone.status_code == 302 and undone["Location"] == "/review/?source=noisy"
    assert Note.objects.raw_queue().filter(source="noisy").count() == 3
    # A return path to another site is ignored.
    group = NoteRevision.objects.filter(action=NoteRevision.Action.UNDO).first().group
    redone = staff_client.post(f"/review/undo/{group}/", {"next": "https://evil.example/"})
    assert redone["Location"] == "/review/"


def test_a_bulk_promote_says_where_the_notes_went(staff_client):
    notes = [make_raw_note() for _ in range(2)]
    response = staff_client.post(
        "/review/bulk/",
        {
            "action": "promote",
            "wing": "concepts",
            "hall": "python",
            "notes": [n.pk for n in notes],
        },
        follow=True,
    )
    assert "Promoted 2 notes into the wiki under concepts/python." in response.content.decode()


# --- 5 (training). approve, reject and swap can be undone; swap asks first ------------------------


@pytest.mark.parametrize("decision", ["approve", "reject", "swap"])
def test_a_training_decision_can_be_undone_from_its_banner(staff_client, decision):
    from sessions.models import TrainingExample
    from tests.ui.conftest import make_example

    example = make_example("dpo")
    chosen, rejected = example.chosen, example.rejected
    data = {"reason": "wrong"} if decision == "reject" else {"confirm": "1"} if decision == "swap" else {}
    page = staff_client.post(f"/training/{example.pk}/{decision}/", data, follow=True).content.decode()
    assert _banner_buttons(page) == ["Undo"]
    url = re.search(r'class="undo-form"[^>]*action="([^"]+)"|action="([^"]+)" class="undo-form"', page)
    undo_url = url.group(1) or url.group(2)
    assert undo_url == f"/training/{example.pk}/undo/0/"
    response = staff_client.post(undo_url, follow=True)
    assert "Undid the" in response.content.decode()
    example.refresh_from_db()
    assert (example.status, example.reviewer, example.reviewed_at) == (TrainingExample.Status.CANDIDATE, None, None)
    assert (example.chosen, example.rejected) == (chosen, rejected)
    assert [e["action"] for e in example.edits] == [decision, "undo"]


def test_a_training_undo_is_refused_once_the_example_changed_again(staff_client):
    from tests.ui.conftest import make_example

    example = make_example("sft")
    staff_client.post(f"/training/{example.pk}/approve/")
    staff_client.post(f"/training/{example.pk}/reject/", {"reason": "changed my mind"})
    response = staff_client.post(f"/training/{example.pk}/undo/0/", follow=True)
    assert "changed after that approve" in response.content.decode()
    example.refresh_from_db()
    assert example.status == "rejected" and [e["action"] for e in example.edits] == ["approve", "reject"]


def test_a_swap_asks_first_and_leaves_a_candidate_unreviewed(staff_client):
    from tests.ui.conftest import make_example

    example = make_example("dpo")
    page = staff_client.get(f"/training/{example.pk}/").content.decode()
    assert 'id="swap-panel"' in page and "Yes, swap them" in page
    refused = staff_client.post(f"/training/{example.pk}/swap/")
    assert refused.status_code == 400 and "Nothing was swapped" in refused.content.decode()
    example.refresh_from_db()
    assert example.edits == []
    staff_client.post(f"/training/{example.pk}/swap/", {"confirm": "1"})
    example.refresh_from_db()
    assert example.status == "candidate" and example.reviewer is None
    listing = staff_client.get("/training/?kind=dpo").content.decode()
    assert re.search(r'<td data-label="reviewer">—</td>', listing)


def test_promote_ranks_again_when_a_wiki_note_changed_after_the_stored_ranking(staff_client, monkeypatch):
    from brain import similar
    from brain.tasks import refresh_similar_notes

    raw = make_raw_note(title="Kafka lag alerts", body="Alert when kafka consumer lag grows for five minutes.")
    refresh_similar_notes(raw.pk)  # ranked before its twin reached the wiki: nothing to flag
    assert similar.stored(raw) == []
    make_wiki_note(title="Kafka lag", body="Alert when kafka consumer lag grows for five minutes.")
    refused = staff_client.post(
        f"/review/{raw.pk}/promote/",
        {
            "wing": "ops",
            "title": raw.title,
            "slug": raw.slug,
            "body": raw.body,
            "version": raw.version,
        },
    )
    assert refused.status_code == 400 and "Kafka lag" in refused.content.decode()
    # Ranked now and stored: a second try reads it without searching again.
    monkeypatch.setattr(similar, "find_similar", lambda note: pytest.fail("searched again"))
    again = staff_client.post(
        f"/review/{raw.pk}/promote/",
        {
            "wing": "ops",
            "title": raw.title,
            "slug": raw.slug,
            "body": raw.body,
            "version": raw.version,
        },
    )
    assert again.status_code == 400


# --- progress, guidelines, activity, project ------------------------------------------------------


def test_the_note_page_says_where_the_note_is_in_the_queue_it_came_from(staff_client):
    notes = [make_raw_note(source="a") for _ in range(4)]  # newest first: notes[3] is 1 of 4
    make_raw_note(source="b")
    page = staff_client.get(f"/review/{notes[2].pk}/", {"from": "source=a"}).content.decode()
    assert re.search(r'id="progress"><b>2 of 4</b> in the queue \(filtered\)', page)
    page = staff_client.get(f"/review/{notes[0].pk}/").content.decode()
    assert "<b>5 of 5</b> in the queue" in page


def test_staff_write_and_edit_the_guidelines_and_everyone_reads_them(staff_client, reader_client):
    queue = staff_client.get("/review/").content.decode()
    assert "Write the guidelines" in queue
    assert "a staff member can write them" in reader_client.get("/review/").content.decode()
    assert reader_client.post("/review/guidelines/").status_code == 403
    response = staff_client.post("/review/guidelines/")
    note = Note.objects.get(slug="review-guidelines")
    assert response["Location"] == f"/review/{note.pk}/#edit-panel"
    staff_client.post(
        f"/review/{note.pk}/edit/", {"title": note.title, "body": "Reject anything vague.", "version": note.version}
    )
    assert "Reject anything vague." in reader_client.get("/review/").content.decode()
    raw = make_raw_note()
    assert "Reject anything vague." in staff_client.get(f"/review/{raw.pk}/").content.decode()
    assert note.revisions.filter(action=NoteRevision.Action.EDIT).exists()  # versioned and undoable like any note


def test_the_activity_page_shows_who_did_what_filtered_by_person_and_action(staff_client, staff_user):
    from django.contrib.auth import get_user_model

    from sessions.actions import do_approve_example
    from tests.ui.conftest import make_example

    other = get_user_model().objects.create_user("sam", is_staff=True)
    first, second = make_raw_note(title="First thing"), make_raw_note(title="Second thing")
    actions.do_reject_note(first, reviewer=staff_user, reason="vague")
    actions.do_promote_note(second, reviewer=other, wing="concepts")
    example = do_approve_example(make_example("sft"), reviewer=other)
    page = staff_client.get("/activity/").content.decode()
    assert "First thing" in page and "Second thing" in page and "sam" in page
    assert f"SFT example #{example.pk}" in page
    # Newest first across both histories: the approval came last.
    assert page.index(f"SFT example #{example.pk}") < page.index("Second thing") < page.index("First thing")
    mine = staff_client.get("/activity/", {"person": "reviewer"}).content.decode()
    assert "First thing" in mine and "Second thing" not in mine and "SFT example" not in mine
    sams = staff_client.get("/activity/", {"person": "sam"}).content.decode()
    assert "Second thing" in sams and "SFT example" in sams and "First thing" not in sams
    promotes = staff_client.get("/activity/", {"action": "note:promote"}).content.decode()
    assert "Second thing" in promotes and "First thing" not in promotes and "SFT example" not in promotes
    approvals = staff_client.get("/activity/", {"action": "example:approve"}).content.decode()
    assert "SFT example" in approvals and "Second thing" not in approvals
    service = staff_client.get("/activity/", {"person": "service"}).content.decode()
    assert "Second thing" not in service and "No activity with these filters" in service
    assert staff_client.get("/activity/", {"action": "nonsense"}).status_code == 200


def test_the_activity_page_pages_through_both_histories(staff_client, staff_user):
    from sessions.actions import do_reject_example
    from sessions.activity import MergedActivity
    from tests.ui.conftest import make_example

    for n in range(30):
        actions.do_reject_note(make_raw_note(title=f"Note {n}"), reviewer=staff_user, reason="no")
        do_reject_example(make_example("sft"), reviewer=staff_user, reason="no")
    merged = MergedActivity()
    assert merged.count() == 60
    everything = list(merged[0:60])
    assert [item.at for item in everything] == sorted((item.at for item in everything), reverse=True)
    assert list(merged[50:60]) == everything[50:60]
    second = staff_client.get("/activity/", {"page": 2}).content.decode()
    assert second.count('<td data-label="when"') == 10 and "page 2 of 2" in second


def test_the_queue_filters_and_shows_the_project(staff_client):
    make_raw_note(title="Api note", frontmatter={"project": "api"})
    make_raw_note(title="Web note", provenance={"project": "web"})
    page = staff_client.get("/review/").content.decode()
    assert '<option value="api"' in page and '<option value="web"' in page
    assert '<td data-label="project">api</td>' in page
    only_web = staff_client.get("/review/", {"project": "web"}).content.decode()
    assert "Web note" in only_web and "Api note" not in only_web


# --- 10. plain language ------------------------------------------------------------------------------


def test_history_names_fields_in_plain_words(staff_client, staff_user):
    note = make_raw_note()
    actions.do_reject_note(note, reviewer=staff_user, reason="vague")
    page = staff_client.get(f"/review/{note.pk}/").content.decode()
    assert "reviewed_by_id" not in page and "reviewed_at" not in page
    assert "changed: status, reviewer, review time, review note" in page


def test_a_wiki_note_shows_the_notes_that_link_to_it(staff_client):
    target = make_wiki_note(title="Advisory locks", slug="advisory-locks")
    make_wiki_note(title="Mirror rounds", body="Each round takes [[advisory-locks]] first.")
    page = staff_client.get(f"/review/{target.pk}/").content.decode()
    backlinks = page[page.index('id="backlinks"') : page.index('id="similar"')]
    assert "Mirror rounds" in backlinks


def test_nothing_relevant_is_said_in_plain_words(staff_client, settings):
    make_wiki_note(title="Kafka lag", body="Alert when kafka consumer lag grows for five minutes.")
    settings.BRAIN_BM25_FLOOR = 0.9  # one shared word is not enough
    page = staff_client.get("/search/", {"q": "kafka tomatoes pruning cordon"}).content.decode()
    message = page[page.index('id="nothing-relevant"') :]
    message = message[: message.index("<details")]
    assert "Nothing relevant" in message and "idf" not in message and "cosine" not in message


def test_the_session_page_lists_the_client_instead_of_a_python_dict(staff_client):
    from sessions.actions import do_log_entry
    from sessions.models import AgentSession

    do_log_entry("s-client", kind="note", message="hi")
    AgentSession.objects.filter(external_id="s-client").update(client={"name": "claude-code", "version": "2.1"})
    page = staff_client.get("/sessions/s-client/").content.decode()
    assert "<dt>name</dt><dd>claude-code</dd>" in page and "{&#x27;name&#x27;" not in page


def test_the_favicon_is_served(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"


# --- 8. a compact curation page ----------------------------------------------------------------


def _change_dpo():
    from sessions.actions import do_store_training_example

    diff = "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-    return a - b\n+    return a + b\n```"
    example, _ = do_store_training_example(
        source_key="test:change-dpo",
        kind="dpo",
        skill="tdd_green",
        prompt=[
            {"role": "system", "content": "worker"},
            {"role": "user", "content": "Skill: tdd_green\nProject root: /p\ntask: add"},
        ],
        chosen=[{"role": "assistant", "content": f"add returns the sum\n\n{diff}"}],
        rejected=[{"role": "assistant", "content": f"add returns the difference\n\n{diff.replace('a + b', 'b - a')}"}],
        provenance={
            "session_id": "s-1",
            "pre_state": {"run": 7, "files": 2},
            "note": "line one\nline two",
            "runs": [7, 8],
        },
    )
    return example


def test_the_curation_page_shows_each_diff_once_and_provenance_as_a_table(staff_client):
    example = _change_dpo()
    page = staff_client.get(f"/training/{example.pk}/").content.decode()
    assert page.count('<pre class="diff">') == 2  # one coloured diff a side; not again as text, nor as a pair diff
    assert 'id="pair-diff"' not in page and 'id="change-diff"' not in page
    assert page.index('id="chosen"') < page.index('id="provenance"')  # the answers come before the rest
    provenance = page[page.index('id="provenance"') : page.index('id="checks"')]
    assert '<span class="pre-text">line one\nline two</span>' in provenance  # not "line one\\nline two"
    assert '<td class="sub">run</td><td><span class="pre-text">7</span>' in provenance
    assert '<span class="pre-text">7, 8</span>' in provenance


def test_an_approved_example_offers_no_approve_and_says_who_approved_it(staff_client, staff_user):
    from sessions.actions import do_approve_example

    example = do_approve_example(_change_dpo(), reviewer=staff_user)
    page = staff_client.get(f"/training/{example.pk}/").content.decode()
    assert 'id="approve-form"' not in page and 'id="reject-form"' in page
    assert "Approved by reviewer" in page


def test_replay_now_queues_trainer_verify_for_that_example(staff_client, reader_client):
    from django_q.models import OrmQ

    from sessions.tasks import replay_example

    example = _change_dpo()
    assert reader_client.post(f"/training/{example.pk}/replay/").status_code == 403
    response = staff_client.post(f"/training/{example.pk}/replay/", follow=True)
    assert "Queued a replay of example" in response.content.decode()
    [queued] = OrmQ.objects.all()
    assert queued.task["func"] == "sessions.tasks.replay_example" and queued.task["args"] == (example.pk,)
    staff = staff_client.session["_auth_user_id"]
    assert str(queued.task["kwargs"]["requested_by_id"]) == staff  # on behalf of the curator who asked (issue 46)
    outcome = replay_example(*queued.task["args"], **queued.task["kwargs"])  # what the worker runs
    example.refresh_from_db()
    assert example.replay_status == outcome["status"] and example.replay["reason"] == outcome["reason"]
    assert example.replay["requested_by"] == get_user_model().objects.get(pk=staff).username


def test_the_training_list_previews_what_differs_between_examples(staff_client):
    _change_dpo()
    page = staff_client.get("/training/?kind=dpo").content.decode()
    assert "task: add → add returns the sum" in page and "Skill: tdd_green" not in page


# --- access rules of the new pages and actions ---------------------------------------------------


def test_the_new_pages_need_a_login_and_the_new_actions_need_staff(client, reader_client, staff_user):
    from tests.ui.conftest import make_example

    note = make_raw_note()
    rejected = make_raw_note()
    actions.do_reject_note(rejected, reviewer=staff_user, reason="no")
    example = make_example("dpo")
    for path in (f"/review/{note.pk}/similar/", "/activity/"):
        response = client.get(path)
        assert response.status_code == 302 and "/login/" in response["Location"], path
        assert reader_client.get(path).status_code == 200, path  # reading needs no staff
    for path, data in (
        (f"/review/{rejected.pk}/reopen/", {}),
        ("/review/guidelines/", {}),
        (f"/training/{example.pk}/replay/", {}),
        (f"/training/{example.pk}/undo/0/", {}),
    ):
        assert reader_client.post(path, data).status_code == 403, path
        assert client.post(path, data).status_code == 302, path
    rejected.refresh_from_db()
    assert rejected.status == NoteStatus.REJECTED and not Note.objects.filter(slug="review-guidelines").exists()
