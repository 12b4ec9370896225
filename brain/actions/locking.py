"""A note's row as it is now, locked for one transaction, and who did a write: shared by every action."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brain.errors import BrainInputError, NoteConflict
from brain.models import (
    Note,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _check_version(note: Note, expected_version: int | None) -> None:
    if expected_version is not None and note.version != expected_version:
        raise NoteConflict(
            f"“{note.title}” was changed by someone else while you were editing (version {expected_version} → "
            f"{note.version}); nothing was saved. Compare the texts below and save again.",
            current=note,
        )


def _locked(note: Note, *, allowed: tuple[str, ...] = (), verb: str = "", expected_version: int | None = None) -> Note:
    """`note` as it is now, locked for this transaction; refused unless its status is one of `allowed` (when
    given) and, with `expected_version`, unless nobody changed it since (NoteConflict)."""
    note = Note.objects.select_for_update().get(pk=note.pk)
    if allowed and note.status not in allowed:
        kinds = " or ".join(allowed)
        raise BrainInputError(f"note {note.slug} is {note.status}; only {kinds} notes can be {verb}.")
    _check_version(note, expected_version)
    return note


def _who(user: User | None) -> str:
    return getattr(user, "get_username", lambda: "")() if user is not None else ""
