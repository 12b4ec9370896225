"""Note actions: validation first, one transaction, links, version, review states."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from brain.actions import (
    BrainInputError,
    do_archive_note,
    do_edit_note,
    do_ingest_note,
    do_ingest_raw_note,
    do_merge_note,
    do_promote_note,
    do_reject_note,
    do_write_raw_note,
)
from brain.models import BrainVersion, Note, NoteLink, NoteStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer():
    return get_user_model().objects.create_user("reviewer", password="x")


def test_writing_a_raw_note_stores_it_with_a_slug_hash_path_and_provenance():
    note = do_write_raw_note(
        title="Async IO in Python", body="Use asyncio.", session_id="s-1", frontmatter={"tags": ["py"]}
    )
    assert note.status == NoteStatus.RAW
    assert note.slug == "async-io-in-python"
    assert note.path == "raw/async-io-in-python.md"
    assert note.content_hash == note.compute_hash() and len(note.content_hash) == 64
    assert note.provenance == {"source": "mcp", "session_id": "s-1"}
    assert note.session_id == "s-1"


def test_the_same_title_twice_gets_a_numbered_slug():
    first = do_write_raw_note(title="Same", body="a")
    second = do_write_raw_note(title="Same", body="b")
    third = do_write_raw_note(title="Same", body="c")
    assert [first.slug, second.slug, third.slug] == ["same", "same-2", "same-3"]


def test_every_write_bumps_the_corpus_version():
    before = BrainVersion.current()
    note = do_write_raw_note(title="V", body="one")
    do_edit_note(note, body="two")
    assert BrainVersion.current() == before + 2


def test_an_edit_that_changes_nothing_does_not_bump_the_version():
    note = do_write_raw_note(title="V", body="one")
    before = BrainVersion.current()
    do_edit_note(note, body="one")
    assert BrainVersion.current() == before


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"title": "", "body": "x"}, "title is empty"),
        ({"title": "t", "body": "   "}, "body is empty"),
        ({"title": "t", "body": "x", "frontmatter": ["a"]}, "frontmatter must be a mapping"),
        ({"title": "t", "body": "x", "frontmatter": "title: x"}, "frontmatter must be a mapping"),
        ({"title": "t", "body": "x", "slug": "../up"}, "'..'"),
        ({"title": "t", "body": "x", "slug": "/abs"}, "absolute"),
        ({"title": "t", "body": "x", "slug": "a\x00b"}, "NUL"),
        ({"title": "t", "body": "x", "slug": "s" * 201}, "over the limit"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(arguments, message):
    with pytest.raises(BrainInputError, match=message):
        do_write_raw_note(**arguments)
    assert Note.objects.count() == 0
    assert BrainVersion.current() == 0


def test_a_body_over_the_size_limit_is_refused(settings):
    settings.BRAIN_MAX_NOTE_BYTES = 1024
    with pytest.raises(BrainInputError, match="over the limit of 1024 bytes"):
        do_write_raw_note(title="big", body="é" * 600)
    assert Note.objects.count() == 0


def test_an_explicit_slug_that_is_taken_is_refused():
    do_write_raw_note(title="One", body="x", slug="taken")
    with pytest.raises(BrainInputError, match="already used"):
        do_write_raw_note(title="Two", body="y", slug="taken")
    assert Note.objects.count() == 1


@pytest.mark.parametrize(
    ("wing", "hall", "message"),
    [("", "", "wing is required"), ("Bad Wing", "", "wing"), ("ok", "no/slash", "hall"), ("", "h", "wing is required")],
)
def test_ingest_needs_a_valid_wing_and_hall(wing, hall, message):
    with pytest.raises(BrainInputError, match=message):
        do_ingest_note(title="t", body="b", wing=wing, hall=hall)
    assert Note.objects.count() == 0


def test_ingest_goes_straight_into_the_wiki_and_ingest_raw_into_raw():
    wiki = do_ingest_note(title="Doc", body="text", wing="sources", hall="papers")
    raw = do_ingest_raw_note(title="Doc", body="text")
    assert (wiki.status, wiki.path) == (NoteStatus.WIKI, "wiki/sources/papers/doc.md")
    assert (raw.status, raw.path, raw.provenance["method"]) == (NoteStatus.RAW, "raw/doc-2.md", "ingest")


def test_wikilinks_and_frontmatter_lists_become_links_that_resolve_when_the_target_appears():
    source = do_write_raw_note(
        title="Source",
        body="See [[later-note]] and [[Existing|the existing one]].",
        frontmatter={"related": ["[[other]]", "existing"], "links": "later-note"},
    )
    existing = Note.objects.get(pk=do_write_raw_note(title="Existing", body="x").pk)
    links = {(link.target_slug, link.kind): link.target_id for link in NoteLink.objects.filter(source=source)}
    assert links == {
        ("later-note", "wikilink"): None,
        ("existing", "wikilink"): existing.id,
        ("other", "related"): None,
        ("existing", "related"): existing.id,
        ("later-note", "links"): None,
    }
    later = do_write_raw_note(title="Later note", body="here now")
    assert set(NoteLink.objects.filter(target_slug="later-note").values_list("target_id", flat=True)) == {later.id}


def test_editing_the_body_rebuilds_the_links():
    note = do_write_raw_note(title="N", body="[[a]] [[b]]")
    do_edit_note(note, body="[[c]]")
    assert list(note.links_out.values_list("target_slug", flat=True)) == ["c"]


def test_promote_moves_a_raw_note_into_the_wiki_and_records_the_reviewer(reviewer):
    note = do_write_raw_note(title="Idea", body="x")
    promoted = do_promote_note(note, reviewer=reviewer, wing="concepts", hall="python", title="Better idea")
    assert (promoted.status, promoted.wing, promoted.hall, promoted.title) == (
        "wiki",
        "concepts",
        "python",
        "Better idea",
    )
    assert promoted.reviewed_by == reviewer and promoted.reviewed_at is not None
    assert promoted.path == "wiki/concepts/python/idea.md"


def test_only_raw_notes_can_be_promoted_or_rejected(reviewer):
    note = do_ingest_note(title="W", body="x", wing="concepts")
    with pytest.raises(BrainInputError, match="only raw"):
        do_promote_note(note, reviewer=reviewer, wing="concepts")
    with pytest.raises(BrainInputError, match="only raw"):
        do_reject_note(note, reviewer=reviewer, reason="no")


def test_reject_needs_a_reason_and_records_it(reviewer):
    note = do_write_raw_note(title="Meh", body="x")
    with pytest.raises(BrainInputError, match="reason is required"):
        do_reject_note(note, reviewer=reviewer, reason="  ")
    assert Note.objects.get(pk=note.pk).status == NoteStatus.RAW
    rejected = do_reject_note(note, reviewer=reviewer, reason="duplicate")
    assert (rejected.status, rejected.review_note, rejected.reviewed_by) == ("rejected", "duplicate", reviewer)


def test_archive_keeps_the_note(reviewer):
    note = do_write_raw_note(title="Old", body="x")
    archived = do_archive_note(note, reason="stale")
    assert Note.objects.filter(pk=note.pk, status="archived", review_note="stale").exists()
    assert archived.status == "archived"


def test_merge_gives_the_target_the_new_body_and_archives_the_raw_note(reviewer):
    target = do_ingest_note(title="Target", body="old", wing="concepts")
    raw = do_write_raw_note(title="Addition", body="new")
    merged = do_merge_note(raw, into=target, reviewer=reviewer, body="old + new")
    raw.refresh_from_db()
    assert merged.body == "old + new" and merged.content_hash == merged.compute_hash()
    assert (raw.status, raw.review_note) == ("archived", "merged into target")


def test_a_wiki_slug_with_folders_needs_a_hall_so_the_folder_reads_back_the_same(reviewer):
    with pytest.raises(BrainInputError, match="give a hall"):
        do_ingest_note(title="t", body="b", wing="concepts", slug="deep/name")
    raw = do_write_raw_note(title="t", body="b", slug="deep/name")
    with pytest.raises(BrainInputError, match="give a hall"):
        do_promote_note(raw, reviewer=reviewer, wing="concepts")
    assert Note.objects.get(pk=raw.pk).status == NoteStatus.RAW
    ok = do_ingest_note(title="t", body="b", wing="concepts", hall="python", slug="deep/other")
    assert ok.path == "wiki/concepts/python/deep/other.md"
