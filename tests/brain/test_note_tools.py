"""Edit, archive, undo and list notes over MCP (issue 28, problem 8).

Each write is one action and one revision, refused when the note changed since the version the
caller saw (as the browser's edit form is), and undoable; brain_recent lists recent activity and
filters by frontmatter tags.
"""

from __future__ import annotations

import pytest

from brain.actions import do_edit_note, do_write_raw_note
from brain.models import Note, NoteRevision, NoteStatus
from tests.brain.conftest import AUTH
from tests.conftest import call_tool

pytestmark = pytest.mark.django_db(transaction=True)


def tool(url: str, name: str, arguments: dict) -> dict:
    result = call_tool(url, name, arguments, AUTH)
    assert result.get("isError") is not True, result
    return result["structuredContent"]


def tool_error(url: str, name: str, arguments: dict) -> str:
    result = call_tool(url, name, arguments, AUTH)
    assert result.get("isError") is True, result
    return result["content"][0]["text"]


def test_an_edit_with_the_seen_version_is_one_revision_and_can_be_undone(brain_server):
    _, url = brain_server
    written = tool(url, "brain_write", {"title": "Pool sizing", "body": "Use 10 connections."})
    seen = tool(url, "brain_get", {"slug": written["slug"]})
    assert seen["version"] == 1
    edited = tool(
        url,
        "brain_edit",
        {"slug": written["slug"], "version": 1, "body": "Use 20 connections.", "frontmatter": {"tags": ["db"]}},
    )
    assert edited["version"] == 2 and edited["change"]
    note = Note.objects.get(slug=written["slug"])
    assert note.body == "Use 20 connections." and note.frontmatter == {"tags": ["db"]}
    assert list(note.revisions.values_list("action", flat=True)) == [NoteRevision.Action.EDIT]

    undone = tool(url, "brain_undo", {"change": edited["change"]})
    note.refresh_from_db()
    assert note.body == "Use 10 connections." and note.frontmatter == {}
    assert undone["notes"][0]["version"] == 3 and undone["notes"][0]["change"] != edited["change"]


def test_a_stale_edit_is_refused_and_writes_nothing(brain_server):
    _, url = brain_server
    note = do_write_raw_note(title="Pool sizing", body="Use 10 connections.")
    do_edit_note(note, body="Someone else's text.")  # now version 2
    message = tool_error(url, "brain_edit", {"slug": note.slug, "version": 1, "body": "My text."})
    assert "changed by someone else" in message and "now version 2" in message
    note.refresh_from_db()
    assert (note.body, note.version) == ("Someone else's text.", 2)


def test_archive_takes_the_note_out_of_search_as_one_revision_and_undo_brings_it_back(brain_server):
    _, url = brain_server
    written = tool(url, "brain_write", {"title": "Obsolete runbook", "body": "Restart the flux capacitor."})
    assert tool(url, "brain_query", {"query": "flux capacitor", "include_raw": True})["count"] == 1
    stale = tool_error(url, "brain_archive", {"slug": written["slug"], "version": 7})
    assert "changed by someone else" in stale
    archived = tool(url, "brain_archive", {"slug": written["slug"], "version": 1, "reason": "superseded"})
    assert archived["status"] == NoteStatus.ARCHIVED
    assert tool(url, "brain_query", {"query": "flux capacitor", "include_raw": True})["count"] == 0
    note = Note.objects.get(slug=written["slug"])
    assert list(note.revisions.values_list("action", "summary")) == [(NoteRevision.Action.ARCHIVE, "superseded")]
    tool(url, "brain_undo", {"change": archived["change"]})
    note.refresh_from_db()
    assert note.status == NoteStatus.RAW


def test_recent_activity_lists_newest_first_with_the_last_change_and_filters_by_tags(brain_server):
    _, url = brain_server
    first = do_write_raw_note(title="First", body="one", frontmatter={"tags": ["db", "ops"]})
    do_write_raw_note(title="Second", body="two", frontmatter={"tags": "db"})
    do_write_raw_note(title="Third", body="three")
    do_edit_note(first, body="one, edited")
    recent = tool(url, "brain_recent", {"limit": 2})
    assert [item["slug"] for item in recent["notes"]] == ["first", "third"]
    assert recent["notes"][0]["last_change"]["action"] == "edit" and recent["notes"][1]["last_change"] is None
    assert recent["notes"][0]["tags"] == ["db", "ops"]
    by_tag = tool(url, "brain_recent", {"tags": ["db"]})
    assert [item["slug"] for item in by_tag["notes"]] == ["first", "second"]
    assert [item["slug"] for item in tool(url, "brain_recent", {"tags": ["db", "ops"]})["notes"]] == ["first"]
    assert tool(url, "brain_recent", {"status": "wiki"})["count"] == 0


def test_a_reviewers_promotion_cannot_be_undone_over_mcp(brain_server, django_user_model):
    _, url = brain_server
    from brain.actions import do_promote_note

    reviewer = django_user_model.objects.create_user("reviewer", password="pw-reviewer-123", is_staff=True)
    note = do_promote_note(do_write_raw_note(title="Reviewed", body="text"), reviewer=reviewer, wing="concepts")
    change = str(note.revisions.get().group)
    assert "reviewer's promote" in tool_error(url, "brain_undo", {"change": change})
    note.refresh_from_db()
    assert note.status == NoteStatus.WIKI


def test_bad_calls_are_clear_errors_and_write_nothing(brain_server):
    _, url = brain_server
    note = do_write_raw_note(title="Keep me", body="as I am")
    assert "No note with slug 'nope'" in tool_error(url, "brain_edit", {"slug": "nope", "version": 1, "body": "x"})
    assert "Nothing to change" in tool_error(url, "brain_edit", {"slug": note.slug, "version": 1})
    assert "no such change" in tool_error(url, "brain_undo", {"change": "not-a-change"})
    assert tool_error(url, "brain_recent", {"limit": 0})
    note.refresh_from_db()
    assert (note.body, note.version, note.revisions.count()) == ("as I am", 1, 0)


def test_brain_query_filters_by_tags_too(brain_server):
    _, url = brain_server
    from brain.actions import do_ingest_note

    do_ingest_note(
        title="Pool reaper",
        body="The pool reaper closes idle connections.",
        wing="concepts",
        frontmatter={"tags": ["db", "ops"]},
    )
    do_ingest_note(
        title="Reaper tuning", body="Tune the pool reaper interval.", wing="concepts", frontmatter={"tags": "ops"}
    )
    do_ingest_note(title="Reaper myths", body="The pool reaper is not a garbage collector.", wing="concepts")
    assert tool(url, "brain_query", {"query": "pool reaper"})["count"] == 3
    ops = tool(url, "brain_query", {"query": "pool reaper", "tags": ["ops"]})
    assert sorted(hit["slug"] for hit in ops["hits"]) == ["pool-reaper", "reaper-tuning"]
    both = tool(url, "brain_query", {"query": "pool reaper", "tags": ["ops", "db"]})
    assert [hit["slug"] for hit in both["hits"]] == ["pool-reaper"]
