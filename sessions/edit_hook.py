"""The edit hook: a session that changes code the team's notes cite hears which notes, at once.

`POST /api/hooks/anchors` takes the PostToolUse input of an `Edit`, `MultiEdit`, `Write` or `NotebookEdit`
(claude-plugin/hyperguild/hooks/hyperguild-edit-hook posts it as Claude Code gives it) and answers Claude
Code's hook answer: `{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": …}}`
naming the notes whose anchors the edit removed or changed (brain.edits), or `{}` when it touched none.
Reading the notes is all the caller needs (`brain:read`); when it may also log the session, the touch
is kept in the session's log (an `anchors` entry with the removed and added text) for the retrospective's
"supersedes" drafts (sessions.note_drafts). The usual capture of the edit is the other PostToolUse hook's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User

from brain.edits import TouchedNoteJson, advice, file_edit, path_suffixes, touched_notes
from brain.models import Project
from sessions.actions import LoggedEntry, check_session_id, do_log_checked_entry
from sessions.errors import HookRefused
from sessions.hooks import CLIENT, HOOK_ID, project_label

ANCHORS_ENTRY = "anchors"


@dataclass
class EditHookOutcome:
    answer: dict[str, Any] = field(default_factory=dict)
    notes: list[TouchedNoteJson] = field(default_factory=list)
    logged: LoggedEntry | None = None


def handle_edit_hook(payload: Any, *, user: User | None = None, may_log: bool = False) -> EditHookOutcome:
    """Answer one edit: the notes it touched (HookRefused, nothing written, for input that is no PostToolUse)."""
    if not isinstance(payload, dict):
        raise HookRefused("The body must be the PostToolUse hook's JSON object, as Claude Code sends it.")
    named = payload.get("hook_event_name")
    if named is not None and named != "PostToolUse":
        raise HookRefused(
            f"The payload is a {named} hook; this route takes PostToolUse of Edit, MultiEdit, Write, NotebookEdit."
        )
    session_id = check_session_id(payload.get("session_id"))
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not (cwd.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", cwd)):
        raise HookRefused("cwd must be the absolute folder Claude Code runs in.")
    outcome = EditHookOutcome()
    edit = file_edit(payload)
    if edit is None:
        return outcome
    project = Project.objects.for_cwd(cwd)
    if project is None:
        return outcome
    touched = touched_notes(project.pk, edit)
    if not touched:
        return outcome
    outcome.notes = [note.as_dict() for note in touched]
    outcome.answer = {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": advice(edit.path, touched)}
    }
    if may_log:
        outcome.logged = do_log_checked_entry(
            session_id,
            {
                "kind": ANCHORS_ENTRY,
                "status": "touched",
                "message": f"edited {_shown(edit.path, cwd)}: touches note(s) " + ", ".join(n.slug for n in touched),
                "data": {
                    "file": _shown(edit.path, cwd),
                    "paths": path_suffixes(edit.path),
                    "edit": edit.evidence(),
                    "notes": outcome.notes,
                },
                "idempotency_key": _key(payload),
                "project": project_label(cwd),
                "project_root": cwd[:1000],
                "client": CLIENT,
            },
            source="rest",
            user=user,
        )
    return outcome


def _shown(path: str, cwd: str) -> str:
    prefix = cwd.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def _key(payload: dict[str, Any]) -> str:
    natural = payload.get("tool_use_id")
    if isinstance(natural, str) and 0 < len(natural) <= 120:
        return f"hook:anchors:{natural}"
    hook_id = payload.get("hyperguild_hook_id")
    if isinstance(hook_id, str) and HOOK_ID.match(hook_id):
        return f"hook:anchors:run:{hook_id}"
    return f"hook:anchors:{payload.get('session_id')}:{hash(str(payload.get('tool_input')))}"
