"""MCP tools that change or list existing notes: brain_edit, brain_archive, brain_undo, brain_recent.

Imported by BrainConfig.ready(), after brain/tools.py. Each write is one action of
`brain.actions`, so one revision that shows in the note's history and can be undone
(in the browser, or with brain_undo and the `change` the write returned). An edit or an
archive names the version it saw (brain_get shows it): when the note changed since, it is
refused and nothing is written, as the browser's edit form is.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pydantic import Field

from brain.actions import do_archive_note, do_edit_note, do_undo_revision
from brain.errors import NoteConflict
from brain.inputs import NoteArchiveInput, NoteEditInput, StatusFilter, Tags
from brain.models import Note, NoteRevision, NoteStatus
from brain.presenters import NoteRef, note_ref
from brain.tools import brain
from hyperguild.mcp.contracts import ToolInput, ToolResult
from hyperguild.mcp.registry import ToolContext, ToolError

RECENT_DEFAULT = 20
RECENT_MAX = 100


class WriteResult(NoteRef):
    change: str | None = Field(
        description="the change this call made (undo it with brain_undo); null when nothing changed"
    )


def _note(slug: str) -> Note:
    note = Note.objects.filter(slug=slug).first()
    if note is None:
        raise ToolError(f"No note with slug {slug!r}; find slugs with brain_query or brain_recent.")
    return note


def _written(note: Note, version_before: int) -> WriteResult:
    change = None
    if note.version != version_before:
        change = str(note.revisions.order_by("-id").values_list("group", flat=True).first())
    return WriteResult(**note_ref(note).model_dump(), change=change)


def _write_at_version(action: Callable[..., Note], note: Note, version: int, **arguments: Any) -> WriteResult:
    """`action` on `note` as the caller saw it (`version`); a note changed since is refused with what to do."""
    try:
        written = action(note, expected_version=version, **arguments)
    except NoteConflict as exc:
        raise ToolError(
            f"{exc} Read it again with brain_get (now version {exc.current.version}) and repeat your change on that text."
        ) from None
    return _written(written, version)


@brain.tool(
    name="brain_edit",
    title="Edit a note",
    description=(
        "Change a note's title, body and/or frontmatter (a field left out stays as it is). Give the version "
        "brain_get showed: if someone changed the note since, nothing is written and the error says so. "
        "One revision in the note's history; undo it with brain_undo and the returned `change`."
    ),
    input_model=NoteEditInput,
    result_model=WriteResult,
    idempotent=True,
    scope="brain:write",
    right="brain:review",  # a change to an existing note is a reviewer's (the browser's edit form asks the same)
)
def brain_edit(arguments: NoteEditInput, ctx: ToolContext) -> WriteResult:
    note = _note(arguments.slug)
    if note.status not in (NoteStatus.RAW, NoteStatus.WIKI):
        raise ToolError(f"note {note.slug} is {note.status}; only raw and wiki notes can be edited.")
    if arguments.title is None and arguments.body is None and arguments.frontmatter is None:
        raise ToolError("Nothing to change: give a title, a body or frontmatter.")
    return _write_at_version(
        do_edit_note,
        note,
        arguments.version,
        title=arguments.title,
        body=arguments.body,
        frontmatter=arguments.frontmatter,
        user=ctx.actor,
    )


@brain.tool(
    name="brain_archive",
    title="Archive a note",
    description=(
        "Take a note out of search and out of the brain folder (hyperguild never deletes a note). Give the "
        "version brain_get showed. One revision; undo it with brain_undo and the returned `change`."
    ),
    input_model=NoteArchiveInput,
    result_model=WriteResult,
    destructive=True,
    idempotent=True,
    scope="brain:write",
    right="brain:review",  # a change to an existing note is a reviewer's (the browser's edit form asks the same)
)
def brain_archive(arguments: NoteArchiveInput, ctx: ToolContext) -> WriteResult:
    note = _note(arguments.slug)
    return _write_at_version(
        do_archive_note, note, arguments.version, reason=(arguments.reason or "").strip(), user=ctx.actor
    )


class UndoInput(ToolInput):
    change: str = Field(min_length=1, max_length=64, description="the change id")


class UndoResult(ToolResult):
    notes: list[WriteResult]


@brain.tool(
    name="brain_undo",
    title="Undo a change",
    description=(
        "Undo one edit or archive (the `change` brain_edit or brain_archive returned, or one from brain_recent): the "
        "note gets back its fields from before. Refused when the note changed again since, and for a reviewer's "
        "promote, reject or merge (undone in the browser). The undo is a revision too."
    ),
    input_model=UndoInput,
    result_model=UndoResult,
    scope="brain:write",
    right="brain:review",  # a change to an existing note is a reviewer's (the browser's edit form asks the same)
)
def brain_undo(arguments: UndoInput, ctx: ToolContext) -> UndoResult:
    # Only what an MCP caller could have done itself: a reviewer's promote, reject, merge or re-file is
    # undone by a person, in the browser.
    group = _change_id(arguments.change)
    actions = set(NoteRevision.objects.filter(group=group).values_list("action", flat=True)) if group else set()
    if actions - UNDOABLE_OVER_MCP:
        raise ToolError(
            f"That change is a reviewer's {', '.join(sorted(actions - UNDOABLE_OVER_MCP))}; undo it in the browser, "
            "from the note's history."
        )
    restored = do_undo_revision(arguments.change, user=ctx.actor)
    return UndoResult(notes=[_written(note, note.version - 1) for note in restored])


UNDOABLE_OVER_MCP = {NoteRevision.Action.EDIT, NoteRevision.Action.ARCHIVE}


def _change_id(change: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(change)
    except ValueError:
        return None


def note_tags(note: Note) -> list[str]:
    """The note's frontmatter `tags` as a list of strings (a YAML list, or one comma-separated string)."""
    tags = (note.frontmatter or {}).get("tags")
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, list):
        return []
    return [str(tag).strip() for tag in tags if str(tag).strip()]


class RecentInput(ToolInput):
    limit: int = Field(RECENT_DEFAULT, ge=1, le=RECENT_MAX)
    status: StatusFilter = "any"
    tags: Tags | None = None


class LastChange(ToolResult):
    action: str
    at: str
    summary: str
    change: str
    undone: bool


class RecentNote(ToolResult):
    slug: str
    title: str
    status: str
    wing: str
    hall: str
    version: int
    tags: list[str]
    updated_at: str
    last_change: LastChange | None = Field(
        description="the newest revision: what was done, when, and its change id (null: written, never changed)"
    )


class RecentResult(ToolResult):
    notes: list[RecentNote]
    count: int


@brain.tool(
    name="brain_recent",
    title="Recent activity and notes by tag",
    description=(
        "The most recently written or changed notes, newest first, with their last change. Filter by status "
        "(default any: every status, archived included, so an archive shows too) and by frontmatter tags "
        "(every tag given must be on the note)."
    ),
    input_model=RecentInput,
    result_model=RecentResult,
    read_only=True,
    idempotent=True,
)
def brain_recent(arguments: RecentInput, ctx: ToolContext) -> RecentResult:
    notes = Note.objects.all()
    if arguments.status != "any":
        notes = notes.filter(status=arguments.status)
    notes = notes.with_tags(arguments.tags)
    recent = list(notes.order_by("-updated_at", "-id")[: arguments.limit])
    latest: dict[int, NoteRevision] = {
        newest.note_id: newest
        for newest in NoteRevision.objects.filter(note__in=recent).order_by("note_id", "-id").distinct("note_id")
    }
    items = []
    for note in recent:
        revision = latest.get(note.id)
        items.append(
            RecentNote(
                slug=note.slug,
                title=note.title,
                status=note.status,
                wing=note.wing,
                hall=note.hall,
                version=note.version,
                tags=note_tags(note),
                updated_at=note.updated_at.isoformat(),
                last_change=None
                if revision is None
                else LastChange(
                    action=revision.action,
                    at=revision.created_at.isoformat(),
                    summary=revision.summary,
                    change=str(revision.group),
                    undone=revision.undone_at is not None,
                ),
            )
        )
    return RecentResult(notes=items, count=len(items))
