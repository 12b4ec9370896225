"""What the core's doors need from the apps above it: one provider each, handed down from `AppConfig.ready()`.

The core (the MCP engine, the REST base view) checks credentials and rights, reports a tool call's usage,
counts and traces its calls, but owns none of these: the people app checks credentials and rights, the
ledger reports usage, observability counts and traces (issue 49). Each app hands its functions down here
at start-up, so the core imports no app (the layers contract, pyproject.toml):

    # people/apps.py
    provide_credentials(authenticate_bearer=…, resource_metadata_url=…, permission_refusal=…)
    # ledger/apps.py
    provide_usage(add_usage)
    # observability/apps.py
    provide_observation(observe_mcp=…, carry_context=…, mcp_span=…)

Without the people app every door stays shut (an error, never an open door); without the ledger or
observability a call is neither priced nor counted, and still answered.

`Identity` and `BearerRefused` live here, not with the people app's checks: they are what a door speaks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

from hyperguild.lib.typed import JSON

if TYPE_CHECKING:
    from hyperguild.mcp.registry import Endpoint


@dataclass(frozen=True)
class Identity:
    """The caller behind a request: a person (user) or the service, and the scopes it holds."""

    user: Any  # a User, or None for the service identity
    scopes: frozenset[str]
    via: str  # "token", "oauth", "service" (environment token) or "open" (no token configured)
    credential: str = ""  # "hgp_3f9a2c1b (laptop)", the OAuth client's name, or the token setting
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    is_authenticated = True  # DRF reads request.user.is_authenticated

    @property
    def username(self) -> str:
        return self.user.get_username() if self.user is not None else "service"

    def allows(self, scope: str) -> bool:
        return scope in self.scopes


class BearerRefused(Exception):
    """A request the bearer check turns away: 401 (no or bad token) or 403 (a scope it lacks)."""

    def __init__(self, status: int, message: str, *, error: str = "", scope: str = "", resource_metadata: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.error = error
        self.scope = scope
        self.resource_metadata = resource_metadata

    def challenge(self, realm: str = "") -> str:
        """The `WWW-Authenticate` value (RFC 6750 §3, RFC 9728 §5.1)."""
        params = [f'realm="{realm}"'] if realm else []
        if self.error:
            params.append(f'error="{self.error}"')
            params.append(f'error_description="{_quoted(self.message)}"')
        if self.scope:
            params.append(f'scope="{self.scope}"')
        if self.resource_metadata:
            params.append(f'resource_metadata="{self.resource_metadata}"')
        return "Bearer " + ", ".join(params) if params else "Bearer"


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', "'").replace("\r", " ").replace("\n", " ")


# --- the providers' shapes -------------------------------------------------------------------------


class Authenticate(Protocol):
    def __call__(
        self, request: HttpRequest, required_scope: str | Collection[str], *, endpoint: Endpoint | None = None
    ) -> Identity: ...


class PermissionRefusal(Protocol):
    def __call__(self, who: Any, right_name: str, *, what: str = "") -> str | None: ...


class McpSpan(Protocol):
    def __call__(
        self, endpoint: str, message: JSON, *, person_id: int | None, revision: str | None
    ) -> AbstractContextManager[object]: ...


ResourceMetadataUrl = Callable[[HttpRequest, "Endpoint | None"], str]
ObserveMcp = Callable[[str, str, "str | None", str, float], None]
CarryContext = Callable[[Callable[[], None]], Callable[[], None]]
AddUsage = Callable[[dict[str, Any], list[int], Any], None]


@contextlib.contextmanager
def _no_span(endpoint: str, message: JSON, *, person_id: int | None, revision: str | None) -> Iterator[None]:
    yield None


@dataclass
class _Providers:
    authenticate_bearer: Authenticate | None = None
    resource_metadata_url: ResourceMetadataUrl | None = None
    permission_refusal: PermissionRefusal | None = None
    add_usage: AddUsage | None = None
    observe_mcp: ObserveMcp | None = None
    carry_context: CarryContext | None = None
    mcp_span: McpSpan | None = None


_providers = _Providers()


def provide_credentials(
    *,
    authenticate_bearer: Authenticate,
    resource_metadata_url: ResourceMetadataUrl,
    permission_refusal: PermissionRefusal,
) -> None:
    """The people app's checks: who a bearer token is, and whether they may do a right (`PeopleConfig.ready()`)."""
    _providers.authenticate_bearer = authenticate_bearer
    _providers.resource_metadata_url = resource_metadata_url
    _providers.permission_refusal = permission_refusal


def provide_usage(add_usage: AddUsage) -> None:
    """The ledger's filling of a tool result's `usage` and `budget_warning` (`LedgerConfig.ready()`)."""
    _providers.add_usage = add_usage


def provide_observation(*, observe_mcp: ObserveMcp, carry_context: CarryContext, mcp_span: McpSpan) -> None:
    """Observability's metrics and traces of MCP calls (`ObservabilityConfig.ready()`)."""
    _providers.observe_mcp = observe_mcp
    _providers.carry_context = carry_context
    _providers.mcp_span = mcp_span


def _missing(what: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"no provider for {what}: the people app gives it (INSTALLED_APPS has 'people')")


# --- what the doors call ---------------------------------------------------------------------------


def authenticate_bearer(
    request: HttpRequest, required_scope: str | Collection[str], *, endpoint: Endpoint | None = None
) -> Identity:
    """The Identity behind `Authorization: Bearer …` holding `required_scope`; raises BearerRefused otherwise."""
    if _providers.authenticate_bearer is None:
        raise _missing("the bearer check")
    return _providers.authenticate_bearer(request, required_scope, endpoint=endpoint)


def resource_metadata_url(request: HttpRequest, endpoint: Endpoint | None) -> str:
    """Where the protected-resource metadata of `endpoint` is (RFC 9728), for a 401's challenge."""
    if _providers.resource_metadata_url is None:
        raise _missing("the resource metadata")
    return _providers.resource_metadata_url(request, endpoint)


def permission_refusal(who: Any, right_name: str, *, what: str = "") -> str | None:
    """Why `who` may not do `right_name` (a sentence to act on), or None when it may (people.permissions)."""
    if _providers.permission_refusal is None:
        raise _missing("the permission check")
    return _providers.permission_refusal(who, right_name, what=what)


def add_usage(structured: dict[str, Any], call_ids: list[int], actor: Any) -> None:
    """Fill a `reports_usage` tool's result with what its model calls used (in place); nothing without a ledger."""
    if _providers.add_usage is not None:
        _providers.add_usage(structured, call_ids, actor)


def observe_mcp(endpoint: str, method: str, tool: str | None, outcome: str, seconds: float) -> None:
    """Count one MCP call (its endpoint, method, tool, outcome and duration)."""
    if _providers.observe_mcp is not None:
        _providers.observe_mcp(endpoint, method, tool, outcome, seconds)


def carry_context(function: Callable[[], None]) -> Callable[[], None]:
    """`function`, made to run in the current trace when it runs in another thread."""
    if _providers.carry_context is None:
        return function
    return _providers.carry_context(function)


def mcp_span(
    endpoint: str, message: JSON, *, person_id: int | None, revision: str | None
) -> AbstractContextManager[object]:
    """A span around one MCP message (a no-op without observability)."""
    span = _providers.mcp_span or _no_span
    return span(endpoint, message, person_id=person_id, revision=revision)
