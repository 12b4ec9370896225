"""The sessions app's domain errors: every refusal of sessions code is a SessionsError."""

from __future__ import annotations

from hyperguild.errors import DomainError


class SessionsError(DomainError):
    """A sessions request that cannot be served; the message says what to change."""


class EntryRefused(SessionsError):
    """A session entry over one of the limits in `sessions.actions.ENTRY_LIMITS`."""
