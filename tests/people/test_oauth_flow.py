"""Acceptance 3: the MCP authorization flow end to end with the official `mcp` client's OAuth support.

The client discovers everything from the 401 (protected-resource metadata, authorization-server
metadata), registers itself (RFC 7591), and sends the person to /oauth/authorize/ with PKCE. Its
redirect handler plays the browser: a test user signs in on hyperguild's login page and allows the
consent page; the callback handler hands the code back. Then the client lists tools and calls
brain_query, with a token bound to /mcp/brain that other endpoints refuse.
"""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth2_provider.models import AccessToken, Application

from brain.actions import do_ingest_note
from brain.models import Note
from people.models import CredentialUse
from tests.conftest import mcp_post, rpc
from tests.people.conftest import bearer, make_person

PASSWORD = "pw-for-tests-123"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never reached: the test's "browser" stops at the redirect


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


HIDDEN = re.compile(r'<input type="hidden" name="([\w-]+)" value="([^"]*)"')
CONTINUE = re.compile(r'<a id="oauth-continue-link" href="([^"]*)"')


def back_to_client(answer: httpx.Response) -> str:
    """Where the authorization endpoint sends the browser back to the client: a page that navigates there
    (a 302 after a form POST would break CSP form-action in a real browser)."""
    assert answer.status_code == 200, (answer.status_code, answer.text[:500])
    assert answer.headers["Cache-Control"] == "no-store"
    href = html.unescape(CONTINUE.search(answer.text).group(1))
    assert f'<meta http-equiv="refresh" content="0; url={html.escape(href)}">' in answer.text
    return href


class Browser:
    """A person at a browser: signs in on the login page, reads the consent page, clicks Allow (or Deny)."""

    def __init__(self, base: str, username: str, *, allow: bool = True) -> None:
        self.base, self.username, self.allow = base, username, allow
        self.consent_page = ""
        self.callback: dict[str, str] = {}

    def authorize(self, url: str) -> None:
        with httpx.Client(base_url=self.base, follow_redirects=False, timeout=30) as browser:
            to_login = browser.get(url)
            assert to_login.status_code == 302 and to_login.headers["location"].startswith("/login/?next="), (
                to_login.text
            )
            login_page = browser.get(to_login.headers["location"])
            fields = dict(HIDDEN.findall(login_page.text))
            signed_in = browser.post(
                "/login/",
                data={
                    "csrfmiddlewaretoken": fields["csrfmiddlewaretoken"],
                    "next": html.unescape(fields["next"]),
                    "username": self.username,
                    "password": PASSWORD,
                },
            )
            assert signed_in.status_code == 302, signed_in.text[:500]
            consent = browser.get(signed_in.headers["location"])
            assert consent.status_code == 200, consent.text[:500]
            self.consent_page = consent.text
            form = {name: html.unescape(value) for name, value in HIDDEN.findall(consent.text)}
            if self.allow:
                form["allow"] = "Authorize"
            answered = browser.post(str(consent.url.copy_with(query=None).path), data=form)
            location = back_to_client(answered)
            assert location.startswith(REDIRECT_URI), location
            self.callback = {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}

    async def redirect_handler(self, url: str) -> None:
        await anyio.to_thread.run_sync(self.authorize, url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=self.callback.get("code", ""), state=self.callback.get("state"), iss=self.callback.get("iss")
        )


def oauth_provider(url: str, browser: Browser, storage: MemoryStorage) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="pytest MCP client",
            redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )


def test_the_mcp_client_signs_a_person_in_and_then_lists_tools_and_queries(live):
    olga = make_person("olga", "reviewer", password=PASSWORD)  # writing notes (brain_write below) needs a writer's role
    do_ingest_note(title="Advisory locks", body="Use pg advisory locks to serialise migrations.", wing="concepts")
    url = f"{live}/mcp/brain"
    browser, storage = Browser(live, "olga"), MemoryStorage()

    async def scenario():
        async with httpx2.AsyncClient(auth=oauth_provider(url, browser, storage), timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                listed = await client.list_tools()
                found = await client.call_tool("brain_query", {"query": "advisory locks"})
                written = await client.call_tool(
                    "brain_write", {"title": "Signed in through OAuth", "body": "It works."}
                )
                return [tool.name for tool in listed.tools], found, written

    names, found, written = anyio.run(scenario)
    assert "brain_query" in names and "brain_write" in names
    assert found.is_error is False
    assert [hit["slug"] for hit in found.structured_content["hits"]] == ["advisory-locks"]
    # The consent page named the client, the person, the scopes and the resource.
    assert "pytest MCP client" in browser.consent_page and "olga" in browser.consent_page
    assert "brain:read" in browser.consent_page and f'<code id="consent-resource">{url}</code>' in browser.consent_page
    assert f'<code id="consent-redirect">{REDIRECT_URI}</code>' in browser.consent_page

    # What it writes names the person who consented.
    assert written.is_error is False, written
    assert Note.objects.get(slug=written.structured_content["slug"]).created_by == olga
    assert CredentialUse.objects.filter(user=olga, kind="oauth", path="/mcp/brain").exists()

    # The token is bound to /mcp/brain (RFC 8707) and holds only the brain's scopes.
    token = storage.tokens.access_token
    issued = AccessToken.objects.get(user=olga)  # (the other one is the registration's own, RFC 7592)
    assert issued.resource == [url] and issued.user == olga
    assert set(issued.scope.split()) == {"brain:read", "brain:write", "sessions:write", "sessions:read"}
    assert issued.token != token  # stored hashed (RFC 9700 token storage)
    for other in ("supervisor", "routing"):
        refused = mcp_post(f"{live}/mcp/{other}", rpc("tools/list"), headers=bearer(token))
        assert refused.status_code == 401, other
        assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
        assert f"/.well-known/oauth-protected-resource/mcp/{other}" in refused.headers["WWW-Authenticate"]
    assert mcp_post(url, rpc("tools/list"), headers=bearer(token)).status_code == 200

    # An hour later the client refreshes: the new token keeps the binding and the scopes, the old one is gone.
    refreshed = httpx.post(
        f"{live}/oauth/token/",
        data={
            "grant_type": "refresh_token",
            "refresh_token": storage.tokens.refresh_token,
            "client_id": storage.client_info.client_id,
            "resource": url,
        },
        timeout=30,
    )
    assert refreshed.status_code == 200, refreshed.text
    fresh = refreshed.json()["access_token"]
    assert mcp_post(url, rpc("tools/list"), headers=bearer(fresh)).status_code == 200
    assert mcp_post(f"{live}/mcp/supervisor", rpc("tools/list"), headers=bearer(fresh)).status_code == 401
    assert mcp_post(url, rpc("tools/list"), headers=bearer(token)).status_code == 401


def test_an_oauth_token_holds_only_its_scopes_and_must_be_bound_to_an_endpoint(live):
    from datetime import timedelta

    from django.utils import timezone

    olga = make_person("olga", password=PASSWORD)
    app = Application.objects.create(
        name="cli", client_type="public", authorization_grant_type="authorization-code", redirect_uris=REDIRECT_URI
    )
    brain = f"{live}/mcp/brain"
    AccessToken.objects.create(
        user=olga,
        application=app,
        token="hooks-only",
        scope="sessions:write",
        resource=[brain],
        expires=timezone.now() + timedelta(hours=1),
    )
    AccessToken.objects.create(
        user=olga,
        application=app,
        token="bound-to-nothing",
        scope="brain:read",
        expires=timezone.now() + timedelta(hours=1),
    )
    assert mcp_post(brain, rpc("tools/list"), headers=bearer("hooks-only")).status_code == 200
    query = mcp_post(
        brain, rpc("tools/call", {"name": "brain_query", "arguments": {"query": "x"}}), headers=bearer("hooks-only")
    ).json()["result"]
    assert query["isError"] is True and "needs the brain:read scope" in query["content"][0]["text"]
    refused = httpx.post(f"{live}/query", json={"query": "x"}, headers=bearer("hooks-only"), timeout=30)
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
    assert 'scope="brain:read"' in refused.headers["WWW-Authenticate"]
    unbound = mcp_post(brain, rpc("tools/list"), headers=bearer("bound-to-nothing"))
    assert unbound.status_code == 401 and 'error="invalid_token"' in unbound.headers["WWW-Authenticate"]
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    assert mcp_post(brain, rpc("tools/list"), headers=bearer("hooks-only")).status_code == 401


def test_a_person_who_denies_consent_gets_no_token(live):
    make_person("olga", password=PASSWORD)
    url = f"{live}/mcp/brain"
    browser, storage = Browser(live, "olga", allow=False), MemoryStorage()

    async def scenario():
        async with httpx2.AsyncClient(auth=oauth_provider(url, browser, storage), timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                await client.list_tools()

    with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the flow error in an exception group
        anyio.run(scenario)
    assert browser.callback.get("error") == "access_denied"
    assert storage.tokens is None and not AccessToken.objects.filter(user__isnull=False).exists()


def test_discovery_documents_describe_each_endpoint(live):
    prm = httpx.get(f"{live}/.well-known/oauth-protected-resource/mcp/routing").json()
    assert prm["resource"] == f"{live}/mcp/routing" and prm["scopes_supported"] == ["routing:run"]
    assert prm["authorization_servers"] == [live]
    asm = httpx.get(f"{live}/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == live
    assert asm["authorization_endpoint"] == f"{live}/oauth/authorize/"
    assert asm["registration_endpoint"] == f"{live}/oauth/register/"
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert asm["response_types_supported"] == ["code"]
    assert "none" in asm["token_endpoint_auth_methods_supported"]
    assert {"brain:read", "brain:write", "sessions:write", "supervisor:run", "routing:run"} <= set(
        asm["scopes_supported"]
    )
    no_token = mcp_post(f"{live}/mcp/brain", rpc("tools/list"))
    assert no_token.status_code == 401
    challenge = no_token.headers["WWW-Authenticate"]
    assert f'resource_metadata="{live}/.well-known/oauth-protected-resource/mcp/brain"' in challenge
    assert 'scope="brain:read brain:write sessions:write sessions:read"' in challenge


@pytest.mark.parametrize(
    "metadata",
    [
        {"redirect_uris": ["javascript:alert(1)"], "token_endpoint_auth_method": "none"},
        {"redirect_uris": [], "token_endpoint_auth_method": "none"},
        {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "private_key_jwt"},
    ],
)
def test_a_bad_client_registration_is_refused_and_registers_nothing(live, metadata):
    response = httpx.post(f"{live}/oauth/register/", json={"client_name": "bad", **metadata}, timeout=30)
    assert response.status_code == 400, response.text
    assert response.json()["error"].startswith("invalid_")
    assert Application.objects.count() == 0


def test_an_authorization_without_pkce_is_refused(live):
    make_person("olga", password=PASSWORD)
    registered = httpx.post(
        f"{live}/oauth/register/",
        json={
            "client_name": "no pkce",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        },
        timeout=30,
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    with httpx.Client(base_url=live, follow_redirects=False, timeout=30) as browser:
        browser.cookies.update(_signed_in_cookies(live, "olga"))
        answer = browser.get(
            "/oauth/authorize/",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "state": "s",
                "scope": "brain:read",
            },
        )
    location = back_to_client(answer)
    assert location.startswith(REDIRECT_URI), location
    assert "error=invalid_request" in location and "Code+challenge+required" in location, location
    assert not AccessToken.objects.filter(user__isnull=False).exists()


def _signed_in_cookies(base: str, username: str) -> httpx.Cookies:
    with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as browser:
        page = browser.get("/login/")
        fields = dict(HIDDEN.findall(page.text))
        done = browser.post(
            "/login/",
            data={
                "csrfmiddlewaretoken": fields["csrfmiddlewaretoken"],
                "next": "/",
                "username": username,
                "password": PASSWORD,
            },
        )
        assert done.status_code == 302
        return browser.cookies


def test_behind_a_proxy_the_documents_name_the_public_url(live, settings):
    public = "https://brain.example.com"
    settings.HYPERGUILD_PUBLIC_URL = public
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": public}  # as settings.py derives it
    prm = httpx.get(f"{live}/.well-known/oauth-protected-resource/mcp/brain").json()
    assert prm["resource"] == f"{public}/mcp/brain" and prm["authorization_servers"] == [public]
    asm = httpx.get(f"{live}/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == public and asm["token_endpoint"] == f"{public}/oauth/token/"
    challenge = mcp_post(f"{live}/mcp/brain", rpc("tools/list")).headers["WWW-Authenticate"]
    assert f'resource_metadata="{public}/.well-known/oauth-protected-resource/mcp/brain"' in challenge
