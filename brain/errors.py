"""The brain's domain errors: every refusal of brain code is a BrainError."""

from __future__ import annotations

from typing import Any

from hyperguild.errors import DomainError


class BrainError(DomainError):
    """A brain request that cannot be served; the message says what to change."""


class BrainInputError(BrainError, ValueError):
    """A write the brain refuses; the message says what to change."""


class NoteConflict(BrainInputError):
    """The note changed after the form was opened (its version moved on); nothing was written.

    `current` is the note as it is now, so the page can show both texts.
    """

    http_status = 409
    code = "conflict"

    def __init__(self, message: str, *, current: Any):
        super().__init__(message)
        self.current = current


class SlugError(BrainError, ValueError):
    """A slug that cannot be used; the message says why and what to do."""


class SearchInputError(BrainError, ValueError):
    """The query or a filter is unusable; the message says what to change."""


class ContextInputError(BrainError, ValueError):
    """project_root or recent_files is unusable; the message says what to change."""


class AnswerUnavailable(BrainError):
    """An upstream service (the reranker or the LLM) failed; the message names it."""


class FolderError(BrainError, ValueError):
    """A file in a brain folder that cannot become a note."""


class CheckRefused(BrainError):
    """A `check:` set by someone who may not: it runs a command on the server, so only a reviewer or staff
    may give a note one (docs/truth.md, "Notes that carry a check"). Nothing was written."""

    http_status = 403
    code = "forbidden"
