"""The loop closes at the session's end: a "supersedes" draft per wiki note the session's edits broke and left.

The edit hook (sessions.edit_hook) logs an `anchors` entry each time an edit removes or changes code a note
cites: the file, the text removed and added, and the notes. At Stop/SessionEnd the retrospective calls
`draft_successors`: for each wiki note named there that is still current and that nobody edited since the
edit (nor wrote a successor for), a raw note is drafted — frontmatter `supersedes: <slug>`, the note's text,
and the session's own change as the evidence (files and what the edits removed and added). It waits in the
review queue beside the note's re-check entry; one decision settles both (brain.actions: promoting the draft
supersedes the note, rejecting it says the note still holds, deciding the note's re-check rejects the draft).
Safe to run again: a draft's key is derived from the session and the note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from brain.actions import SUPERSEDES_KEY, do_write_raw_note
from brain.models import Note, NoteRevision, NoteStatus
from sessions.edit_hook import ANCHORS_ENTRY
from sessions.models import AgentSession, SessionEntry

MAX_QUOTED_BODY_CHARS = 3000
MAX_CHANGE_CHARS = 1500
MAX_EDITS_SHOWN = 5


@dataclass
class Touch:
    slug: str
    title: str
    first_seq: int
    first_at: datetime
    edits: list[dict[str, Any]] = field(default_factory=list)


def touches(session: AgentSession) -> list[Touch]:
    """The wiki notes the session's edits touched (in the order first touched), with each edit (in order)."""
    found: dict[str, Touch] = {}
    for entry in SessionEntry.objects.filter(session=session, kind=ANCHORS_ENTRY).order_by("seq"):
        data = entry.data if isinstance(entry.data, dict) else {}
        given = data.get("edit")
        edit: dict[str, Any] = given if isinstance(given, dict) else {}
        for note in data.get("notes") or []:
            if not isinstance(note, dict) or note.get("status") != NoteStatus.WIKI or not note.get("slug"):
                continue
            touch = found.setdefault(
                note["slug"], Touch(note["slug"], note.get("title", ""), entry.seq, entry.created_at)
            )
            touch.edits.append(
                {
                    "file": data.get("file", ""),
                    "removed": edit.get("removed", ""),
                    "added": edit.get("added", ""),
                    "anchors": note.get("anchors") or [],
                    "seq": entry.seq,
                }
            )
    return list(found.values())


def draft_key(session_id: str, slug: str) -> str:
    return f"supersedes:{session_id}:{slug}"


def left_as_it_was(note: Note, touch: Touch) -> bool:
    """Nobody edited the note after the edit touched it, nor superseded it, nor wrote a successor for it."""
    if note.status != NoteStatus.WIKI or note.superseded_by_id is not None:
        return False
    if NoteRevision.objects.filter(note=note, action=NoteRevision.Action.EDIT, created_at__gte=touch.first_at).exists():
        return False
    return (
        not Note.objects.filter(
            status__in=(NoteStatus.RAW, NoteStatus.WIKI), **{f"frontmatter__{SUPERSEDES_KEY}": note.slug}
        )
        .exclude(provenance__retrospective_key__startswith="supersedes:")
        .exists()
    )


def draft_body(note: Note, touch: Touch, session_id: str) -> str:
    quoted = note.body if len(note.body) <= MAX_QUOTED_BODY_CHARS else note.body[:MAX_QUOTED_BODY_CHARS] + "\n…"
    lines = [
        f"supersedes [[{note.slug}]]",
        "",
        f"Session {session_id} changed code that “{note.title}” cites and did not update the note. "
        "Rewrite this draft into what is true now and promote it in the note's place, or reject it if the note "
        "still holds (either settles the note's re-check).",
        "",
        "## What the note says",
        "",
        *[f"> {line}" if line else ">" for line in quoted.splitlines()],
        "",
        "## The session's change",
    ]
    for edit in touch.edits[:MAX_EDITS_SHOWN]:
        anchors = "; ".join(f"{a.get('kind')} `{a.get('value')}` {a.get('change')}" for a in edit["anchors"][:5])
        lines += ["", f"### {edit['file']} (entry {edit['seq']}): {anchors}", "", "```diff"]
        lines += [f"- {line}" for line in str(edit["removed"])[:MAX_CHANGE_CHARS].splitlines()]
        lines += [f"+ {line}" for line in str(edit["added"])[:MAX_CHANGE_CHARS].splitlines()]
        lines += ["```"]
    if len(touch.edits) > MAX_EDITS_SHOWN:
        lines += ["", f"… and {len(touch.edits) - MAX_EDITS_SHOWN} more edits (the session's log has them)."]
    return "\n".join(lines)


def draft_successors(session: AgentSession, *, author: User | None = None) -> list[dict[str, Any]]:
    """Draft a successor for each touched wiki note left as it was; one item per touched note, with its outcome.

    The drafts carry the session owner's change, so they name the owner (`author`) as the retrospective's notes do.
    """
    session_id = session.external_id
    reported = []
    for touch in touches(session):
        slug = touch.slug
        item: dict[str, Any] = {"supersedes": slug, "key": draft_key(session_id, slug)}
        note = Note.objects.filter(slug=slug).first()
        existing = Note.objects.filter(provenance__retrospective_key=item["key"]).first()
        if existing is not None:
            item.update(outcome="exists", note_slug=existing.slug)
        elif note is None or not left_as_it_was(note, touch):
            item.update(outcome="updated")  # the note was edited, superseded or given a successor: nothing to draft
        else:
            provenance = {
                "session_id": session_id,
                "entries": [edit["seq"] for edit in touch.edits],
                "method": "rules",
                "retrospective_key": item["key"],
                SUPERSEDES_KEY: slug,
                "files": sorted({edit["file"] for edit in touch.edits}),
            }
            if note.project is not None:
                provenance["project"] = note.project.name
            frontmatter = {SUPERSEDES_KEY: slug, "tags": ["retrospective", "supersedes"], "session": session_id}
            if note.project is not None:
                frontmatter["project"] = note.project.name
            draft = do_write_raw_note(
                title=f"{note.title} (after session {session_id[:8]})"[:200],
                body=draft_body(note, touch, session_id),
                frontmatter=frontmatter,
                source="retrospective",
                provenance=provenance,
                session_id=session_id,
                user=author,
            )
            item.update(outcome="written", note_slug=draft.slug)
        reported.append(item)
    return reported
