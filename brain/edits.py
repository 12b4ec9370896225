"""What one edit in a Claude Code session does to the team's notes: the anchors it removed or changed.

The plugin's edit hook (claude-plugin/hyperguild/hooks/hyperguild-edit-hook) posts the PostToolUse input of an
`Edit`, `MultiEdit`, `Write` or `NotebookEdit` to `POST /api/hooks/anchors`; `file_edit` reads what the tool call
removed and what it put in its place, and `touched_notes` answers from the anchors of the project the session's
folder belongs to (docs/truth.md, "The edit hook"):

- a **symbol** or **setting** is touched when the removed text defines it (`def send_invoice`, `class Invoice`,
  `MAX_ATTEMPTS = 3`) and the new text does not (renamed or deleted);
- a **quote** when the removed text holds the quoted line and the new text does not, or the removed text is part
  of the quoted line and was replaced by something else;
- for a `Write` (the whole file is known afterwards): a symbol, setting or quote tied to that file that the new
  content no longer holds.

Only anchors tied to the edited file count (`Anchor.path`: the file the note ties them to, or the file they were
last found in), so an edit answers from an indexed lookup, not a scan of the brain. Pure matching: nothing is written here.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, TypedDict

from brain.models import EXPORTED_STATUSES, Anchor, Note
from brain.truth import describe
from hyperguild.lib.typed import JSON

FILE_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
MAX_PATH_PARTS = 12  # suffixes of the edited path tried as repository-relative paths
MAX_NOTES = 10  # notes named in one answer (the rest are counted)
MIN_PARTIAL_CHARS = 6  # a removed fragment this long inside a quoted line changes it
MAX_SHOWN_CHARS = 80
MAX_EVIDENCE_CHARS = 4000  # of the removed and added text kept for the session's retrospective


class EditEvidence(TypedDict):
    """What an edit changed, as the session's `anchors` entry keeps it (capped)."""

    tool: str
    removed: str
    added: str


class TouchedAnchorJson(TypedDict):
    kind: str
    value: str
    path: str
    change: str


class TouchedNoteJson(TypedDict):
    """A note an edit touched, as the hook's answer and the session's entry list it."""

    slug: str
    title: str
    status: str
    state: str
    anchors: list[TouchedAnchorJson]


@dataclass(frozen=True)
class FileEdit:
    """One tool call's change to one file: the texts it removed and added; `content` is the whole file after
    it when the call says so (`Write`), else None."""

    tool: str
    path: str
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    content: str | None = None

    def evidence(self) -> EditEvidence:
        """What the session changed, kept (capped) in its log for the note drafts of its retrospective."""
        return {
            "tool": self.tool,
            "removed": "\n".join(self.removed)[:MAX_EVIDENCE_CHARS],
            "added": "\n".join(self.added)[:MAX_EVIDENCE_CHARS],
        }


@dataclass
class TouchedAnchor:
    kind: str
    value: str
    path: str
    change: str  # "removed" (nothing like it in the new text) or "changed"

    def line(self) -> str:
        shown = self.value if len(self.value) <= MAX_SHOWN_CHARS else self.value[: MAX_SHOWN_CHARS - 1] + "…"
        return f"{self.kind} `{shown}` {self.change}"


@dataclass
class TouchedNote:
    slug: str
    title: str
    status: str
    state: str  # the note's verification label ("verified at 1a2b3c4", …)
    anchors: list[TouchedAnchor] = field(default_factory=list)

    def as_dict(self) -> TouchedNoteJson:
        return {
            "slug": self.slug,
            "title": self.title,
            "status": self.status,
            "state": self.state,
            "anchors": [{"kind": a.kind, "value": a.value, "path": a.path, "change": a.change} for a in self.anchors],
        }


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _patch_lines(response: JSON) -> tuple[list[str], list[str]]:
    """The lines a tool's `structuredPatch` (Claude Code's answer to Write and Edit) removed and added."""
    removed, added = [], []
    for hunk in response.get("structuredPatch") or []:
        for line in hunk.get("lines") or [] if isinstance(hunk, dict) else []:
            if isinstance(line, str) and line.startswith("-"):
                removed.append(line[1:])
            elif isinstance(line, str) and line.startswith("+"):
                added.append(line[1:])
    return removed, added


def file_edit(payload: JSON) -> FileEdit | None:
    """The change a PostToolUse input describes, or None when it is not a file tool's (or names no file)."""
    tool = payload.get("tool_name")
    given_input, given_response = payload.get("tool_input"), payload.get("tool_response")
    tool_input: JSON = given_input if isinstance(given_input, dict) else {}
    response: JSON = given_response if isinstance(given_response, dict) else {}
    if tool not in FILE_TOOLS:
        return None
    path = _text(tool_input.get("file_path") or tool_input.get("notebook_path"))
    if not path:
        return None
    if tool == "Edit":
        return FileEdit(tool, path, (_text(tool_input.get("old_string")),), (_text(tool_input.get("new_string")),))
    if tool == "MultiEdit":
        edits = [e for e in tool_input.get("edits") or [] if isinstance(e, dict)]
        return FileEdit(
            tool,
            path,
            tuple(_text(e.get("old_string")) for e in edits),
            tuple(_text(e.get("new_string")) for e in edits),
        )
    if tool == "Write":
        content = _text(tool_input.get("content"))
        original = response.get("originalFile")
        if isinstance(original, str):
            diff = list(difflib.ndiff(original.splitlines(), content.splitlines()))
            removed = [line[2:] for line in diff if line.startswith("- ")]
            added = [line[2:] for line in diff if line.startswith("+ ")]
        else:
            removed, added = _patch_lines(response)
        return FileEdit(
            tool, path, ("\n".join(removed),) if removed else (), ("\n".join(added),) if added else (), content
        )
    # NotebookEdit: the cell's new source; what it replaced only when Claude Code's answer carries it.
    old = _text(response.get("old_source") or response.get("original_source"))
    return FileEdit(tool, path, (old,) if old else (), (_text(tool_input.get("new_source")),))


def path_suffixes(path: str) -> list[str]:
    """`/home/ana/ledgerly/billing/retry.py` → `billing/retry.py`, `ledgerly/billing/retry.py`, …: whichever is
    the path inside the repository, wherever the session's folder sits in it."""
    parts = [part for part in re.split(r"[\\/]+", path) if part and part != "."]
    return ["/".join(parts[-count:]) for count in range(1, min(len(parts), MAX_PATH_PARTS) + 1)]


def _squash(text: str) -> str:
    return " ".join(text.split())


def _defines(name: str) -> re.Pattern[str]:
    word = re.escape(name)
    return re.compile(
        rf"(?:\b(?:def|class|function|func|fn|const|let|var|type|interface|struct|enum|trait|module|macro)\s+{word}\b)"
        rf"|(?:^|\n)[ \t]*(?:export\s+)?{word}\s*(?::[^=\n]*)?=(?!=)",
    )


def anchor_change(anchor: Anchor, edit: FileEdit) -> str:
    """How `edit` leaves `anchor`: "removed", "changed" or "" (as it was)."""
    if anchor.kind in ("symbol", "setting"):
        name = anchor.value.split(".")[-1]
        pattern = _defines(name)
        if edit.content is not None:  # the whole file after the call: the anchor, tied to it, is in it or gone
            return "" if re.search(rf"\b{re.escape(name)}\b", edit.content) else "removed"
        if any(pattern.search(text) for text in edit.removed) and not any(pattern.search(text) for text in edit.added):
            still_named = any(re.search(rf"\b{re.escape(name)}\b", text) for text in edit.added)
            return "changed" if still_named else "removed"
        return ""
    if anchor.kind == "quote":
        quote = _squash(anchor.value)
        if not quote:
            return ""
        if edit.content is not None:
            return "" if quote in _squash(edit.content) else ("changed" if edit.removed or edit.added else "removed")
        for removed, added in zip(edit.removed, edit.added or ("",) * len(edit.removed), strict=False):
            old, new = _squash(removed), _squash(added)
            if quote in new:
                continue  # the line is still there (re-indented, or with a comment added)
            if quote in old:
                return "removed" if not new else "changed"
            if len(old) >= MIN_PARTIAL_CHARS and old in quote and old != new:
                return "changed"
        return ""
    return ""  # a path is not removed by editing its file; a command's target lives in a build file


def candidate_anchors(project_id: int, path: str) -> list[Anchor]:
    """The anchors of the project's live, current notes tied to the edited file.

    `Anchor.path` is the file an anchor depends on (its hint when written, where it was found once checked):
    one indexed lookup, whatever the size of the brain. Only the columns the answer needs are read."""
    return list(
        Anchor.objects.filter(
            path__in=path_suffixes(path),
            note__project_id=project_id,
            note__status__in=EXPORTED_STATUSES,
            note__superseded_by__isnull=True,
            kind__in=("symbol", "setting", "quote"),
        )
        .select_related("note")
        .only(
            "kind",
            "value",
            "path",
            "hint",
            "note__slug",
            "note__title",
            "note__status",
            "note__verification_state",
            "note__verified_commit",
            "note__verification_evidence",
        )
    )


def touched_notes(project_id: int, edit: FileEdit) -> list[TouchedNote]:
    """The notes whose anchors `edit` removed or changed, wiki notes first, each with those anchors."""
    found: dict[int, TouchedNote] = {}
    for anchor in candidate_anchors(project_id, edit.path):
        change = anchor_change(anchor, edit)
        if not change:
            continue
        note: Note = anchor.note
        if note.pk not in found:
            state = describe(note.verification_state, note.verified_commit, note.verification_evidence)
            found[note.pk] = TouchedNote(note.slug, note.title, note.status, state)
        found[note.pk].anchors.append(TouchedAnchor(anchor.kind, anchor.value, anchor.path or anchor.hint, change))
    return sorted(found.values(), key=lambda t: (t.status != "wiki", t.slug))


def advice(edit_path: str, notes: list[TouchedNote]) -> str:
    """The additionalContext for Claude Code: which notes, which anchors, and what to do now."""
    shown = path_suffixes(edit_path)[min(2, len(path_suffixes(edit_path))) - 1] if edit_path else edit_path
    lines = [
        f"hyperguild: this edit to {shown} changed code that {len(notes)} team note(s) cite; every teammate's "
        "session reads them, so bring them up to date now, while you know what changed:"
    ]
    for note in notes[:MAX_NOTES]:
        anchors = "; ".join(anchor.line() for anchor in note.anchors[:3])
        lines.append(f"- {note.title} ({note.slug}, {note.status}, {note.state}): {anchors}")
    if len(notes) > MAX_NOTES:
        lines.append(f"- … and {len(notes) - MAX_NOTES} more")
    lines.append(
        "For each: brain_get <slug>, then brain_edit it if you may change the wiki, or brain_write a successor note "
        "with frontmatter `supersedes: <slug>` saying what changed. If the note still holds, leave it; "
        "if you revert this edit, nothing is needed."
    )
    return "\n".join(lines)
