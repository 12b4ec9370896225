"""brain_edit, brain_archive and brain_undo over MCP need brain:write and name the person in the note's history."""

from __future__ import annotations

from brain.actions import do_write_raw_note
from brain.models import Note, NoteRevision
from tests.conftest import call_tool
from tests.people.conftest import bearer, make_person, token_for


def test_a_read_only_token_cannot_edit_archive_or_undo_and_a_writer_is_named(live):
    make_person("carol", "reviewer")  # editing a note is a reviewer's; the reader token below still cannot
    note = do_write_raw_note(title="Ledgerly rounding", body="Ledgerly rounds per invoice line.")
    reader = bearer(token_for("carol", "brain:read"))
    writer = bearer(token_for("carol", "brain:read", "brain:write"))
    url = f"{live}/mcp/brain"

    for tool, arguments in (
        ("brain_edit", {"slug": note.slug, "version": note.version, "body": "changed"}),
        ("brain_archive", {"slug": note.slug, "version": note.version}),
        ("brain_undo", {"change": "00000000-0000-0000-0000-000000000000"}),
    ):
        refused = call_tool(url, tool, arguments, headers=reader)
        assert refused["isError"] is True and "brain:write" in refused["content"][0]["text"], (tool, refused)
    note.refresh_from_db()
    assert note.body == "Ledgerly rounds per invoice line." and note.status == "raw"

    edited = call_tool(
        url, "brain_edit", {"slug": note.slug, "version": note.version, "body": "Per line."}, headers=writer
    )
    assert edited["isError"] is False, edited
    revision = NoteRevision.objects.filter(note=note).order_by("-pk").first()
    assert Note.objects.get(pk=note.pk).body == "Per line."
    assert revision.user is not None and revision.user.username == "carol"
