"""The supervisor's domain errors: every refusal of supervisor code is a SupervisorError."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hyperguild.errors import DomainError

if TYPE_CHECKING:
    from supervisor.models import RoutingEntry


class SupervisorError(DomainError):
    """A supervisor request that cannot be served; the message says what to change."""


class RootRefused(SupervisorError):
    """The path is outside the allowed roots (or is not a usable path at all)."""


class ArgumentRefused(SupervisorError):
    """An argument that would reach a shell or git in a way the supervisor does not allow."""


class ApplyRefused(SupervisorError):
    """The apply call cannot start (no such review, not verified, not a git project, branch exists)."""


class ModelTableError(SupervisorError):
    """The model table file exists but cannot be used."""


class RoutingFailed(SupervisorError):
    """Every attempt failed; the message names each model and why."""

    def __init__(self, message: str, entries: list[RoutingEntry], data: Any = None):
        super().__init__(message, data={"routing_entries": [e.pk for e in entries]})
        self.entries = entries
        self.answer = data  # the last attempt's (checked) answer, if the model gave one


class GatewayMissing(SupervisorError):
    """The routing endpoint has no OpenAI-compatible gateway to ask (LITELLM_BASE_URL is not set)."""


class ProjectCommandFailed(SupervisorError):
    """A command the supervisor runs in the project to read it (git diff) failed."""
