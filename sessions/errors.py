"""The sessions app's domain errors: every refusal of sessions code is a SessionsError."""

from __future__ import annotations

from hyperguild.errors import DomainError


class SessionsError(DomainError):
    """A sessions request that cannot be served; the message says what to change."""


class EntryRefused(SessionsError):
    """A session entry over one of the limits in `sessions.actions.ENTRY_LIMITS`."""


class SessionNotFound(SessionsError, LookupError):
    """No session with that id."""

    http_status = 404
    code = "not_found"


class SessionNotYours(SessionsError, PermissionError):
    """A session another person started: only they append to it (and read it, with staff)."""

    http_status = 403
    code = "permission_denied"


class InvalidExampleEdit(SessionsError, ValueError):
    """An edit that would leave a training example in a shape TRL cannot read."""


class FlaggedExample(InvalidExampleEdit):
    """Approving an example flagged for a possible secret needs an explicit confirmation."""


class HookRefused(SessionsError):
    """A Claude Code hook payload the hook route cannot use; the message says what is wrong."""
