"""The brain's domain errors: every refusal of brain code is a BrainError."""

from __future__ import annotations

from hyperguild.errors import DomainError


class BrainError(DomainError):
    """A brain request that cannot be served; the message says what to change."""
