"""Who is calling: one function turns a bearer token into an Identity, for MCP, REST and hooks alike.

Three kinds of bearer token open the service's doors:

- a person's own token (`hgp_…`, made on the Tokens page or with `manage.py token create`):
  the person, with the scopes the token was made with;
- an OAuth 2.1 access token (django-oauth-toolkit, the MCP authorization flow): the person
  who consented, with the granted scopes, bound to the resource (endpoint URL) it was issued for;
- an endpoint's environment token (`BRAIN_MCP_TOKEN`, …): the built-in service identity,
  holding every scope of that endpoint and naming no person.

`authenticate_bearer(request, required_scope)` decides, and raises `BearerRefused` (401 or 403,
with the `WWW-Authenticate` challenge the MCP authorization spec asks for) otherwise. Scopes
are declared by the apps on their endpoints (`Endpoint(scopes=…)`); the core names none.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from oauth2_provider.models import AccessToken

from hyperguild.mcp.registry import Endpoint, all_endpoints
from hyperguild.providers import BearerRefused, Identity
from people.models import CredentialUse, PersonalToken
from people.permissions import all_rights, role_scopes

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger("hyperguild.auth")

PERSONAL_TOKEN_PREFIX = "hgp_"
# How many characters of a personal token are kept in clear to name it ("hgp_3f9a2c1b").
SHOWN_PREFIX_LENGTH = len(PERSONAL_TOKEN_PREFIX) + 8
# last_used_at is written at most this often per token: a busy hook must not turn every call into an UPDATE.
LAST_USED_RESOLUTION = timedelta(seconds=60)


# --- scopes ------------------------------------------------------------------------


def known_scopes() -> Mapping[str, str]:
    """Every scope an endpoint declares → what it opens (the tools that need it), in declaration order."""
    described: dict[str, list[str]] = {}
    for endpoint in all_endpoints():
        for scope in endpoint.scopes:
            described.setdefault(scope, [])
        for tool in endpoint.tools.values():
            if tool.scope:
                described.setdefault(tool.scope, []).append(tool.name)

    # A scope no tool needs (sessions:read: a REST route) is described by its right.
    rights = {right.name: right.description for right in all_rights()}
    return {
        scope: (f"{', '.join(tools)} on " if tools else f"{rights[scope]}; " if rights.get(scope) else "")
        + ", ".join(f"/mcp/{e.name}" for e in all_endpoints() if scope in e.scopes)
        for scope, tools in described.items()
    }


def check_scopes(scopes: Collection[str]) -> list[str]:
    """The scopes in a stable order; ValueError naming the unknown ones (and the known) otherwise."""
    known = known_scopes()
    unknown = sorted(set(scopes) - set(known))
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(unknown)}; known: {', '.join(known)}")
    if not scopes:
        raise ValueError(f"a token needs at least one scope; known: {', '.join(known)}")
    return [scope for scope in known if scope in set(scopes)]


def endpoints_with_scope(scopes: Collection[str]) -> list[Endpoint]:
    return [endpoint for endpoint in all_endpoints() if set(endpoint.scopes) & set(scopes)]


# --- personal tokens -----------------------------------------------------------------


def new_personal_token() -> tuple[str, str, str]:
    """(token, prefix, sha256 hex): the token is shown once; prefix and hash are stored."""
    token = PERSONAL_TOKEN_PREFIX + secrets.token_hex(4) + secrets.token_urlsafe(32)
    return token, token[:SHOWN_PREFIX_LENGTH], token_digest(token)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# --- the one bearer check --------------------------------------------------------------


def public_url(request: HttpRequest, path: str) -> str:
    """An absolute URL as clients reach it: under HYPERGUILD_PUBLIC_URL when set (behind a proxy), else this request's."""
    if settings.HYPERGUILD_PUBLIC_URL:
        return settings.HYPERGUILD_PUBLIC_URL.rstrip("/") + path
    return request.build_absolute_uri(path)


def resource_url(request: HttpRequest, endpoint: Endpoint) -> str:
    """The endpoint's canonical URL, the resource an OAuth token must be bound to (RFC 8707)."""
    return public_url(request, f"/mcp/{endpoint.name}")


def resource_metadata_url(request: HttpRequest, endpoint: Endpoint | None) -> str:
    """Where the protected-resource metadata of this endpoint is (RFC 9728 path form)."""
    suffix = f"/mcp/{endpoint.name}" if endpoint is not None else ""
    return public_url(request, f"/.well-known/oauth-protected-resource{suffix}")


def authenticate_bearer(
    request: HttpRequest, required_scope: str | Collection[str], *, endpoint: Endpoint | None = None
) -> Identity:
    """The Identity behind `Authorization: Bearer …`, holding `required_scope` (or one of several).

    `endpoint` names the MCP endpoint whose environment token is also accepted (and whose URL an
    OAuth token must be bound to); without it, the endpoints that declare the scope are used. With
    no environment token configured for them and no Authorization header, the door is open (the
    service identity, as before people had tokens). Raises BearerRefused otherwise; every use of a
    person's token or an OAuth token is recorded (CredentialUse) and dates the token's last use.
    """
    wanted = {required_scope} if isinstance(required_scope, str) else set(required_scope)
    endpoints = [endpoint] if endpoint is not None else endpoints_with_scope(wanted)
    metadata = resource_metadata_url(request, endpoints[0] if len(endpoints) == 1 else None)
    # The scopes to ask for (MCP authorization, "scope selection"): what this door needs, in declaration order.
    challenge_scope = " ".join(scope for scope in known_scopes() if scope in wanted)
    header = request.META.get("HTTP_AUTHORIZATION", "").strip()
    if header.lower() == "bearer":
        # `Bearer ` with nothing after it is no credential at all: what a client configured with an empty token
        # variable sends (the plugin's `Bearer ${HYPERGUILD_TOKEN:-}` on a server with no tokens).
        header = ""
    if not header:
        if endpoints and not any(e.token() for e in endpoints):
            return Identity(user=None, scopes=_service_scopes(endpoints), via="open")
        paths = ", ".join(f"/mcp/{e.name}" for e in endpoints) or request.path
        raise BearerRefused(
            401,
            f"{paths} needs Authorization: Bearer <token> (a personal token, an OAuth token or the server's "
            f"{' / '.join(e.token_setting for e in endpoints if e.token_setting) or 'token'}).",
            scope=challenge_scope,
            resource_metadata=metadata,
        )
    scheme, _, value = header.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value:
        raise BearerRefused(
            401,
            "The Authorization header must be 'Bearer <token>'.",
            error="invalid_request",
            resource_metadata=metadata,
        )

    identity: Identity | None
    for candidate in endpoints:
        expected = candidate.token()
        # Constant-time comparison: the token must not leak through timing.
        if expected and hmac.compare_digest(value.encode(), expected.encode()):
            identity = Identity(
                user=None, scopes=frozenset(candidate.scopes), via="service", credential=candidate.token_setting or ""
            )
            break
    else:
        if value.startswith(PERSONAL_TOKEN_PREFIX):
            identity = _personal_identity(value)
        else:
            identity = _oauth_identity(value, request, endpoints)
        if identity is None:
            raise BearerRefused(
                401,
                "The bearer token is not valid here: unknown, revoked, expired, or issued for another endpoint.",
                error="invalid_token",
                scope=challenge_scope,
                resource_metadata=metadata,
            )

    if wanted and not wanted & identity.scopes:
        if wanted & set(identity.extra.get("granted_scopes", ())):
            raise BearerRefused(
                403,
                f"This token was granted {', '.join(sorted(wanted & set(identity.extra['granted_scopes'])))}, "
                f"but {identity.username}'s role does not allow it now (docs/people.md: roles); {request.path} "
                f"needs one of: {challenge_scope}.",
                error="insufficient_scope",
                scope=challenge_scope,
                resource_metadata=metadata,
            )
        raise BearerRefused(
            403,
            f"This token's scopes ({', '.join(sorted(identity.scopes)) or 'none'}) do not reach "
            f"{request.path}; it needs one of: {challenge_scope}.",
            error="insufficient_scope",
            scope=challenge_scope,
            resource_metadata=metadata,
        )
    if identity.via in ("token", "oauth"):
        _record_use(identity, request)
    return identity


def _service_scopes(endpoints: list[Endpoint]) -> frozenset[str]:
    return frozenset(scope for e in endpoints for scope in e.scopes)


def _personal_identity(value: str) -> Identity | None:
    token = PersonalToken.objects.usable().select_related("user").filter(token_hash=token_digest(value)).first()
    if token is None or not token.user.is_active:
        return None
    return Identity(
        user=token.user,
        scopes=effective_scopes(token.user, token.scopes),
        via="token",
        credential=f"{token.prefix} ({token.name})",
        extra={"token_id": token.pk, "granted_scopes": tuple(token.scopes)},
    )


def _oauth_identity(value: str, request: HttpRequest, endpoints: list[Endpoint]) -> Identity | None:
    token = AccessToken.objects.select_related("application", "user").filter(token_checksum=token_digest(value)).first()
    if token is None or token.is_expired() or token.user is None or not token.user.is_active:
        return None
    # Bound to the resource it was issued for (RFC 8707): a token for /mcp/brain opens nothing else, and a
    # token bound to nothing (a client that sent no `resource`) opens nothing at all.
    if not token.resource or not any(token.allows_audience(resource_url(request, e)) for e in endpoints):
        return None
    client = token.application.name if token.application else "OAuth client"
    granted = token.scope.split()
    return Identity(
        user=token.user,
        scopes=effective_scopes(token.user, granted),
        via="oauth",
        credential=f"oauth: {client}",
        extra={"access_token_id": token.pk, "granted_scopes": tuple(granted)},
    )


def effective_scopes(user: User, granted: Collection[str]) -> frozenset[str]:
    """What a person's credential may use now: the scopes it was granted ∩ those their role allows today."""
    return frozenset(role_scopes(user, [scope for scope in granted]))


def _client_address(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR") or None


def _record_use(identity: Identity, request: HttpRequest) -> None:
    """Audit one use; a database hiccup here never turns a good token away."""
    now = timezone.now()
    address = _client_address(request)
    try:
        CredentialUse.objects.create(
            user=identity.user,
            kind=identity.via,
            credential=identity.credential[:200],
            method=request.method or "",
            path=request.path[:300],
            address=address,
            at=now,
        )
        token_id = identity.extra.get("token_id")
        if token_id:
            # A conditional UPDATE: at most one write a minute per token, whatever the traffic.
            stale = now - LAST_USED_RESOLUTION
            PersonalToken.objects.filter(pk=token_id).filter(
                Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale)
            ).update(last_used_at=now, last_used_ip=address)
    except DatabaseError:
        logger.exception("could not record the use of %s", identity.credential)
