"""The brain's domain errors: every refusal of brain code is a BrainError."""

from __future__ import annotations

from hyperguild.errors import DomainError


class BrainError(DomainError):
    """A brain request that cannot be served; the message says what to change."""


# BrainInputError and NoteConflict (bad input to a write, a version conflict) are still defined in
# brain/actions.py, under BrainError; they move here with the next change to that module.


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
