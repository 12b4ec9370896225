"""OAuth 2.1 for the MCP endpoints, on django-oauth-toolkit (the MCP authorization specification).

What a client such as Claude Code finds, in order:

1. a 401 from `/mcp/<endpoint>` whose `WWW-Authenticate` names `resource_metadata`;
2. that protected-resource metadata (RFC 9728), `/.well-known/oauth-protected-resource/mcp/<endpoint>`:
   the resource (the endpoint's URL), this server as its authorization server, the endpoint's scopes;
3. the authorization-server metadata (RFC 8414), `/.well-known/oauth-authorization-server`;
4. dynamic client registration (RFC 7591) at `/oauth/register/` (or, when turned on, a client ID
   metadata document URL as its client_id);
5. the authorization code flow with PKCE (S256 only): `/oauth/authorize/` signs the person in on
   hyperguild's login page and shows the consent page; `/oauth/token/` issues a token bound to the
   `resource` asked for (RFC 8707) with the scopes consented to.

What is refused, and why (docs/security.md, "OAuth"): a `resource` that is not exactly one endpoint's
URL (canonical_resource); redirect URIs other than https or http to a loopback address, or with userinfo
(redirect_uri_problem); grant types other than authorization_code and refresh_token; more than
HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR registrations an hour from one address; a code used twice (and
then every token issued from it).

Resource servers check the token in `people.auth.authenticate_bearer`, like every other token.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from oauth2_provider import oauth2_validators, views
from oauth2_provider.exceptions import FatalClientError, OAuthToolkitError
from oauth2_provider.models import Application, get_grant_model, get_refresh_token_model
from oauth2_provider.scopes import BaseScopes
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import OAuthProtectedResourceMetadataView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from hyperguild.mcp.registry import Endpoint, all_endpoints, find_endpoint
from people.actions import do_admit_client_registration, do_record_redeemed_code, do_revoke_tokens_of_replayed_code
from people.auth import known_scopes, public_url, resource_url, token_digest

if TYPE_CHECKING:
    from oauthlib.common import Request as OAuthlibRequest

logger = logging.getLogger("hyperguild.oauth")


class EndpointScopes(BaseScopes):
    """The scopes the apps declare on their endpoints (`Endpoint(scopes=…)`), described by what they open."""

    def get_all_scopes(self) -> Mapping[str, str]:
        return known_scopes()

    def get_available_scopes(
        self, application: object = None, request: object = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        return list(known_scopes())

    def get_default_scopes(
        self, application: object = None, request: object = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        # A client that asks for nothing gets the least: the first scope declared (reading, on the first endpoint).
        return list(known_scopes())[:1]


class EndpointResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata per MCP endpoint: `/.well-known/oauth-protected-resource/mcp/<name>`.

    The root document (no path) describes the whole server with every scope; a path that is not
    an endpoint is a 404, so a client never gets a resource that does not exist.
    """

    endpoint: Endpoint | None  # the endpoint the document is about (None: the whole server), set per request

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        path = kwargs.get("resource_path", "").strip("/")
        self.endpoint = None
        if path:
            name = path.removeprefix("mcp/") if path.startswith("mcp/") else ""
            self.endpoint = find_endpoint(name) if name and "/" not in name else None
            if self.endpoint is None:
                return JsonResponse(
                    {"error": "not_found", "error_description": f"no protected resource at /{path}"}, status=404
                )
        return super().dispatch(request, *args, **kwargs)

    def get_resource(self, request: HttpRequest) -> str:
        return public_url(request, f"/mcp/{self.endpoint.name}" if self.endpoint is not None else "/")

    def get_scopes_supported(self) -> list[str]:
        return list(self.endpoint.scopes) if self.endpoint is not None else list(known_scopes())

    def get_resource_name(self) -> str:
        return self.endpoint.title if self.endpoint is not None else "hyperguild"


# --- the resource a token is for (RFC 8707): exactly one endpoint -----------------------------------------


class ResourceRefused(ValueError):
    """A `resource` that is not exactly one MCP endpoint's URL; the message says what to send instead."""


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _normalised(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port if parts.port != _DEFAULT_PORTS.get(scheme) else None
    path = parts.path.rstrip("/") or "/"
    return scheme, (parts.hostname or "").lower(), port, path


def canonical_resource(request: HttpRequest, resource: str) -> str:
    """The canonical URL of the one endpoint `resource` names; ResourceRefused when it names none, or more.

    Scheme and host compare case-insensitively, a default port and a trailing slash are ignored. A
    `.`/`..` segment, a query, a fragment or userinfo are refused outright (the consent page must show
    what the token opens), and so are the origin root and any prefix of an endpoint's URL (`/mcp`).
    """
    endpoints = {resource_url(request, endpoint): endpoint for endpoint in all_endpoints()}
    choices = ", ".join(sorted(endpoints))
    try:
        parts = urlsplit(resource)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ResourceRefused(f"The resource {resource!r} is not a URL; ask for one of: {choices}.") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise ResourceRefused(f"The resource {resource!r} is not an http(s) URL; ask for one of: {choices}.")
    # Compared as written, not as parsed: `…/mcp/brain?` has an empty query urlsplit drops (issue 46).
    if "@" in parts.netloc or "?" in resource or "#" in resource:
        raise ResourceRefused(
            f"The resource {resource!r} has userinfo, a query or a fragment; ask for one of: {choices}."
        )
    if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        raise ResourceRefused(
            f"The resource {resource!r} has a '.' or '..' segment; ask for the endpoint's own URL, one of: {choices}."
        )
    wanted = _normalised(resource)
    for url in endpoints:
        if _normalised(url) == wanted:
            return url
    for url in endpoints:
        scheme, host, port, path = _normalised(url)
        if (scheme, host, port) == wanted[:3] and (wanted[3] == "/" or path.startswith(wanted[3] + "/")):
            raise ResourceRefused(
                f"The resource {resource!r} would open more than one endpoint; a token is for "
                f"exactly one: ask for one of: {choices}."
            )
    raise ResourceRefused(f"The resource {resource!r} is not an endpoint of this server; ask for one of: {choices}.")


def resource_is_exactly(request_uri: str, audiences: list[str]) -> bool:
    """RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR: a token opens the endpoint it names, not what starts with it."""
    return request_uri in audiences


def _refused_target(message: str, credentials: dict[str, Any]) -> OAuthToolkitError:
    """invalid_target, sent back to the client; shown on the page instead when there is no redirect URI to trust."""
    error = CustomOAuth2Error(error="invalid_target", description=message, state=credentials.get("state"))
    if not credentials.get("redirect_uri"):
        return FatalClientError(error=error)
    return OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"])


class AuthorizationView(views.AuthorizationView):
    """The consent page, with two rules of our own.

    - `resource` is required and must be exactly one endpoint's URL (canonical_resource); the grant, the
      consent page and the token carry the canonical URL.
    - The way back to the client is a page that navigates there, not a 302: a browser applies CSP
      `form-action 'self'` to every redirect that follows a form's POST (the consent form, or the sign-in
      form whose answer leads here), and the client's loopback address is not 'self'.
    """

    def validate_authorization_request(self, request: HttpRequest) -> tuple[list[str], dict[str, Any]]:
        scopes, credentials = super().validate_authorization_request(request)
        asked = request.GET.getlist("resource")
        if len(asked) != 1:
            raise _refused_target(
                "Send exactly one resource parameter: the URL of the one MCP endpoint the token is for "
                f"(one of: {', '.join(sorted(resource_url(request, e) for e in all_endpoints()))}).",
                credentials,
            )
        try:
            canonical = canonical_resource(request, asked[0])
        except ResourceRefused as exc:
            raise _refused_target(str(exc), credentials) from None
        query = request.GET.copy()
        query.setlist("resource", [canonical])
        request.GET = query  # type: ignore[assignment]  # the copy (mutable) replaces the client's query
        return scopes, credentials

    def form_valid(self, form: forms.Form) -> HttpResponse:
        # The hidden field can be edited before the form is posted: checked again, and made canonical.
        asked = (form.cleaned_data.get("resource") or "").split()
        application = Application.objects.filter(client_id=form.cleaned_data.get("client_id")).first()
        redirect_uri = form.cleaned_data.get("redirect_uri")
        if application is None or not application.redirect_uri_allowed(redirect_uri):
            redirect_uri = None  # an edited form: the error is shown here, never sent to an unregistered address
        credentials = {"state": form.cleaned_data.get("state"), "redirect_uri": redirect_uri}
        try:
            if len(asked) != 1:
                raise ResourceRefused("Send exactly one resource: the URL of the one MCP endpoint the token is for.")
            form.cleaned_data["resource"] = canonical_resource(self.request, asked[0])
        except ResourceRefused as exc:
            return self.error_response(_refused_target(str(exc), credentials), application)
        return super().form_valid(form)

    def redirect(self, redirect_to: str, application: Application | None) -> HttpResponse:
        # The same checks as the stock redirect (the URI's scheme is one the client may use) ...
        checked = super().redirect(redirect_to, application)
        # ... answered as a page that navigates there (see the class docstring).
        response = render(
            self.request,
            "hyperguild/oauth_redirect.html",
            {
                "redirect_to": checked.url,
                "client_name": getattr(application, "name", ""),
            },
        )
        response["Cache-Control"] = "no-store"
        response["Referrer-Policy"] = "no-referrer"
        return response


# --- one issuer --------------------------------------------------------------------------------------------


class ServerMetadataView(views.OAuthServerMetadataView):
    """RFC 8414 metadata. The issuer is the origin (or HYPERGUILD_PUBLIC_URL) wherever the document is read:
    MCP clients also look below an endpoint's path (`/.well-known/oauth-authorization-server/mcp/brain`), and
    the issuer there must be the one the root document and the authorization response's `iss` name."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
        response = super().get(request, *args, **kwargs)
        document = json.loads(response.content)
        document["issuer"] = oauth2_settings.oauth2_authorization_server_issuer(request)
        return JsonResponse(document, status=response.status_code)


# --- dynamic client registration (RFC 7591), as RFC 8252 and RFC 9700 want it ---------------------------------

ALLOWED_GRANT_TYPES = ("authorization_code", "refresh_token")
LOOPBACK_HOSTS = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: object) -> str | None:
    """Why a client may not register `uri` as a redirect URI (None: it may).

    https anywhere; http only to a loopback address (RFC 8252 §7.3: a native client's local listener); no
    userinfo (`http://127.0.0.1@evil.example/` goes to evil.example) and no fragment.
    """
    if not isinstance(uri, str):
        return f"a redirect URI must be a string, not {uri!r}"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return f"{uri!r} is not a URL"
    if "@" in parts.netloc:
        return f"{uri!r} has userinfo (user@host): a redirect URI names its host plainly"
    if parts.fragment or "#" in uri:
        return f"{uri!r} has a fragment"
    if parts.scheme not in ("http", "https"):
        return f"{uri!r}: a redirect URI is https, or http to a loopback address (127.0.0.1, [::1])"
    if not parts.hostname:
        return f"{uri!r} names no host"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and _is_loopback(parts.hostname):
        return None
    return f"{uri!r} is plain http to a host that is not loopback: use https, or http://127.0.0.1:<port>/…"


def registration_problem(metadata: object) -> tuple[str, str] | None:
    """(RFC 7591 error code, why) when these client metadata are refused before anything is registered.

    None: DOT checks the rest (the JSON shape, the authentication method, that there are redirect URIs).
    """
    if not isinstance(metadata, dict):
        return None  # DOT answers a body that is not a JSON object itself
    grant_types = metadata.get("grant_types", ["authorization_code"])
    if isinstance(grant_types, list):
        other = [grant for grant in grant_types if grant not in ALLOWED_GRANT_TYPES]
        if other:
            return "invalid_client_metadata", (
                f"grant type(s) {', '.join(map(repr, other))} are not offered: only authorization_code (with PKCE) "
                "and refresh_token (RFC 9700)"
            )
    response_types = metadata.get("response_types", ["code"])
    if isinstance(response_types, list) and any(kind != "code" for kind in response_types):
        return "invalid_client_metadata", "only the response type 'code' is offered (RFC 9700: no implicit flow)"
    redirect_uris = metadata.get("redirect_uris", [])
    if isinstance(redirect_uris, list):
        for uri in redirect_uris:
            if problem := redirect_uri_problem(uri):
                return "invalid_redirect_uri", problem
    return None


# An address refused by the rate limit is refused again from memory for this long, without asking the
# database: an address that keeps trying after its 429 costs the process next to nothing.
REFUSED_ADDRESS_MEMORY_SECONDS = 60.0
_refused_addresses: dict[str | None, float] = {}
_refused_lock = threading.Lock()


def _refused_recently(address: str | None) -> bool:
    with _refused_lock:
        until = _refused_addresses.get(address)
        if until is not None and until <= time.monotonic():
            del _refused_addresses[address]
            until = None
        return until is not None


def _remember_refused(address: str | None) -> None:
    with _refused_lock:
        now = time.monotonic()
        if len(_refused_addresses) > 10_000:  # many addresses: forget the ones whose time is up
            for key in [key for key, until in _refused_addresses.items() if until <= now]:
                del _refused_addresses[key]
        _refused_addresses[address] = now + REFUSED_ADDRESS_MEMORY_SECONDS


class RegistrationLane:
    """At most HYPERGUILD_OAUTH_REGISTRATION_CONCURRENCY registrations run at once in a web process; one more
    is answered 503 with `Retry-After: 1` at once, before it would wait in the process's queue
    (AdmissionMiddleware) ahead of people's searches. Registration is open to anyone: fifty addresses
    registering in a loop must not make `/query` wait behind them (bench/registration.py measures it)."""

    def __init__(self) -> None:
        self.semaphore: threading.BoundedSemaphore | None = None
        self.lock = threading.Lock()

    def _places(self) -> threading.BoundedSemaphore:
        with self.lock:
            if self.semaphore is None:
                self.semaphore = threading.BoundedSemaphore(settings.HYPERGUILD_OAUTH_REGISTRATION_CONCURRENCY)
            return self.semaphore

    def try_enter(self) -> bool:
        return self._places().acquire(blocking=False)

    def leave(self) -> None:
        self._places().release()


registration_lane = RegistrationLane()


class RegistrationLaneMiddleware:
    """First in MIDDLEWARE: registrations take a place in `registration_lane` or are answered 503 at once."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.path: str | None = None

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if self.path is None:
            self.path = reverse("oauth2_provider:dcr-register")
        if request.method != "POST" or request.path_info != self.path:
            return self.get_response(request)
        if not registration_lane.try_enter():
            response = JsonResponse(
                {
                    "error": "temporarily_unavailable",
                    "error_description": "Other clients are registering right now; try again in a second.",
                },
                status=503,
            )
            response["Retry-After"] = "1"
            return response
        try:
            return self.get_response(request)
        finally:
            registration_lane.leave()


def forget_refused_addresses() -> None:
    """Clear the memory of refused addresses (this process's): the database's count decides again."""
    with _refused_lock:
        _refused_addresses.clear()


class RegisterClientView(views.DynamicClientRegistrationView):
    """RFC 7591 registration: rate-limited per address, redirect URIs and grant types as RFC 8252/9700 want.

    No credential is needed (a client registers before a person signs in), so it must stay cheap: a public
    client (`token_endpoint_auth_method: none`, as Claude Code registers) gets no secret to hash
    (drop_public_client_secret), and each address may try HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR times an hour.
    """

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        address = request.META.get("REMOTE_ADDR") or None
        refused = _refused_recently(address)
        if not refused and not do_admit_client_registration(address):
            refused = True
            _remember_refused(address)
        if refused:
            response = JsonResponse(
                {
                    "error": "too_many_requests",
                    "error_description": f"This address has registered {settings.HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR} "
                    "clients this hour (HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR); reuse a registered client_id or "
                    "try again later.",
                },
                status=429,
            )
            response["Retry-After"] = "3600"
            return response
        try:
            metadata = json.loads(request.body)
        except ValueError:
            metadata = None
        if problem := registration_problem(metadata):
            error, why = problem
            return JsonResponse({"error": error, "error_description": why}, status=400)
        return super().post(request, *args, **kwargs)


class ManageClientView(views.DynamicClientRegistrationManagementView):
    """RFC 7592 management (`GET/PUT/DELETE /oauth/register/<client_id>/` with the registration access token):
    an update must follow the rules a registration follows (registration_problem), else it is refused with
    nothing changed; without them a client could swap its redirect URI for `http://evil.example/cb` (issue 46)."""

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.META.get("HTTP_AUTHORIZATION"):  # without a token: DOT's 401, which tells nothing
            try:
                metadata = json.loads(request.body)
            except ValueError:
                metadata = None
            if problem := registration_problem(metadata):
                error, why = problem
                return JsonResponse({"error": error, "error_description": why}, status=400)
        return super().put(request, client_id, *args, **kwargs)


def drop_public_client_secret(sender: type[Application], instance: Application, **kwargs: Any) -> None:
    """pre_save of a new Application: a public client authenticates with nothing, so it is given no secret.

    django-oauth-toolkit would otherwise generate one and hash it with the password hasher (a third of a
    second of CPU), for every unauthenticated registration.
    """
    if instance._state.adding and instance.client_type == Application.CLIENT_PUBLIC:
        instance.client_secret = ""
        instance.hash_client_secret = False


# --- a code is good once (RFC 6749 §4.1.2) ------------------------------------------------------------------


class OAuth2Validator(oauth2_validators.OAuth2Validator):
    """django-oauth-toolkit's validator, remembering each redeemed code so a replay revokes its tokens."""

    @staticmethod
    def _match_bound_resource(request: OAuthlibRequest) -> None:
        """A `resource` sent to the token endpoint in another spelling of the one the grant is bound to
        (`…/mcp/brain/`, an upper-case host) means that one; anything else is left for DOT to refuse."""
        asked = getattr(request, "resource", None)
        if not isinstance(asked, str) or not asked.strip():
            return
        if request.grant_type == "authorization_code":
            grant = get_grant_model().objects.filter(code=request.code, application=request.client).first()
            bound = (grant.resource or []) if grant is not None else []
        else:
            refresh = getattr(request, "refresh_token_instance", None)
            bound = (refresh.resource or []) if refresh is not None else []
        parts = urlsplit(asked)
        if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")) or "@" in parts.netloc:
            return
        for url in bound:
            if url != asked and _normalised(url) == _normalised(asked) and not parts.query and not parts.fragment:
                request.resource = url
                return

    def validate_code(
        self, client_id: str, code: str, client: Application | None, request: OAuthlibRequest, *args: Any, **kwargs: Any
    ) -> bool:
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True

        if client is not None and do_revoke_tokens_of_replayed_code(code, client.client_id):
            logger.warning("OAuth code replayed for client %s: every token issued from it is revoked", client.client_id)
        return False

    def save_bearer_token(self, token: dict[str, Any], request: OAuthlibRequest, *args: Any, **kwargs: Any) -> Any:
        self._match_bound_resource(request)
        saved = super().save_bearer_token(token, request, *args, **kwargs)
        if request.grant_type == "authorization_code" and request.code:
            refresh = None
            if token.get("refresh_token"):
                refresh = (
                    get_refresh_token_model()
                    .objects.filter(token_checksum=token_digest(token["refresh_token"]))
                    .first()
                )
            do_record_redeemed_code(
                request.code,
                request.client.client_id,
                access_token_checksum=token_digest(token["access_token"]),
                token_family=refresh.token_family if refresh is not None else None,
            )
        return saved
