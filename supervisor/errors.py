"""The supervisor's domain errors: every refusal of supervisor code is a SupervisorError."""

from __future__ import annotations

from hyperguild.errors import DomainError


class SupervisorError(DomainError):
    """A supervisor request that cannot be served; the message says what to change."""
