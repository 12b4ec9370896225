"""OAuth as issue 35 found it wanting (findings 3, 7 and 11): each refusal, and that it writes nothing.

Real HTTP against the live server; the person's browser is httpx with their session cookie (the real
browser, chromium, runs the whole flow in tests/e2e/test_oauth_in_a_browser.py).
"""

from __future__ import annotations

import base64
import hashlib
import html
import secrets
import socket
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.contrib.auth.hashers import identify_hasher
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from people.models import ClientRegistrationAttempt, RedeemedAuthorizationCode
from tests.conftest import mcp_post, rpc
from tests.people.conftest import bearer, make_person
from tests.people.test_oauth_flow import HIDDEN, PASSWORD, REDIRECT_URI, _signed_in_cookies, back_to_client


def register(live: str, **metadata) -> httpx.Response:
    body = {
        "client_name": "cli",
        "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **metadata,
    }
    return httpx.post(f"{live}/oauth/register/", json=body, timeout=30)


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize(live: str, client_id: str, resource: str, challenge: str, *, tamper: str | None = None) -> dict:
    """Sign olga in, read the consent page, allow; the parameters the client's callback receives."""
    with httpx.Client(base_url=live, follow_redirects=False, timeout=30) as browser:
        browser.cookies.update(_signed_in_cookies(live, "olga"))
        page = browser.get(
            "/oauth/authorize/",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "state": "st-1",
                "scope": "brain:read",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": resource,
            },
        )
        if 'id="oauth-continue-link"' in page.text:  # refused before the consent page: straight back to the client
            location = back_to_client(page)
        else:
            assert page.status_code == 200 and 'id="consent"' in page.text, page.text[:500]
            form = {name: html.unescape(value) for name, value in HIDDEN.findall(page.text)}
            form["allow"] = "Authorize"
            if tamper is not None:
                form["resource"] = tamper
            location = back_to_client(browser.post("/oauth/authorize/", data=form))
    assert location.startswith(REDIRECT_URI), location
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def exchange(live: str, client_id: str, code: str, verifier: str) -> httpx.Response:
    return httpx.post(
        f"{live}/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": client_id,
            "code_verifier": verifier,
        },
        timeout=30,
    )


# --- finding 3: a token for one endpoint cannot be widened -----------------------------------------------


@pytest.mark.parametrize(
    "asked, why",
    [
        ("{live}/", "would open more than one endpoint"),
        ("{live}", "would open more than one endpoint"),
        ("{live}/mcp", "would open more than one endpoint"),
        ("{live}/mcp/", "would open more than one endpoint"),
        ("{live}/mcp/brain/../supervisor", "has a '.' or '..' segment"),
        ("{live}/mcp/brain/%2e%2e/supervisor", "has a '.' or '..' segment"),
        ("{live}/mcp/brainstorm", "is not an endpoint of this server"),
        ("{live}/mcp/brain?x=1", "has userinfo, a query or a fragment"),
        ("{live}/mcp/brain?", "has userinfo, a query or a fragment"),  # issue 46: an empty query was accepted
        ("{live}/mcp/brain/?", "has userinfo, a query or a fragment"),
        ("{live}/mcp/brain#", "has userinfo, a query or a fragment"),
        ("http://@{host}/mcp/brain", "has userinfo, a query or a fragment"),
        ("http://evil.example/mcp/brain", "is not an endpoint of this server"),
    ],
)
def test_a_resource_that_is_not_exactly_one_endpoint_is_refused_with_a_clear_error(live, asked, why):
    make_person("olga", "reader", password=PASSWORD)
    client_id = register(live).json()["client_id"]
    back = authorize(live, client_id, asked.format(live=live, host=live.split("://", 1)[1]), pkce()[1])
    assert back["error"] == "invalid_target" and back["state"] == "st-1"
    assert why in back["error_description"] and f"{live}/mcp/brain" in back["error_description"]
    assert not Grant.objects.exists() and not AccessToken.objects.filter(user__isnull=False).exists()


def test_a_resource_without_a_resource_parameter_is_refused(live):
    make_person("olga", "reader", password=PASSWORD)
    client_id = register(live).json()["client_id"]
    with httpx.Client(base_url=live, follow_redirects=False, timeout=30) as browser:
        browser.cookies.update(_signed_in_cookies(live, "olga"))
        page = browser.get(
            "/oauth/authorize/",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "state": "s",
                "scope": "brain:read",
                "code_challenge": pkce()[1],
                "code_challenge_method": "S256",
            },
        )
    back = parse_qs(urlsplit(back_to_client(page)).query)
    assert back["error"] == ["invalid_target"] and "exactly one resource" in back["error_description"][0]


def test_a_resource_edited_in_the_consent_form_is_refused(live):
    make_person("olga", "reader", password=PASSWORD)
    client_id = register(live).json()["client_id"]
    back = authorize(live, client_id, f"{live}/mcp/brain", pkce()[1], tamper=f"{live}/")
    assert back["error"] == "invalid_target" and not Grant.objects.exists()


def test_a_resource_is_stored_in_its_canonical_form_and_the_token_opens_only_that_endpoint(live):
    make_person("olga", "reader", password=PASSWORD)
    client_id = register(live).json()["client_id"]
    verifier, challenge = pkce()
    shouted = live.replace("http://", "HTTP://") + "/mcp/brain/"
    back = authorize(live, client_id, shouted, challenge)
    assert Grant.objects.get().resource == [f"{live}/mcp/brain"]
    token = exchange(live, client_id, back["code"], verifier).json()["access_token"]
    assert mcp_post(f"{live}/mcp/brain", rpc("tools/list"), headers=bearer(token)).status_code == 200
    for other in ("supervisor", "routing"):
        assert mcp_post(f"{live}/mcp/{other}", rpc("tools/list"), headers=bearer(token)).status_code == 401


def test_a_token_bound_to_the_origin_root_opens_no_endpoint(live):
    """Tokens issued before the fix (resource = the origin) must not open everything below it."""
    from datetime import timedelta

    from django.utils import timezone

    olga = make_person("olga", "reader", password=PASSWORD)
    app = Application.objects.create(
        name="old", client_type="public", authorization_grant_type="authorization-code", redirect_uris=REDIRECT_URI
    )
    for name, resource in (("root-token", f"{live}/"), ("mcp-token", f"{live}/mcp")):
        AccessToken.objects.create(
            user=olga,
            application=app,
            token=name,
            scope="brain:read brain:write",
            resource=[resource],
            expires=timezone.now() + timedelta(hours=1),
        )
        for endpoint in ("brain", "supervisor", "routing"):
            assert mcp_post(f"{live}/mcp/{endpoint}", rpc("tools/list"), headers=bearer(name)).status_code == 401
        assert httpx.get(f"{live}/routing/stats", headers=bearer(name), timeout=30).status_code in (401, 403)


# --- finding 11: registration, replayed codes, one issuer ------------------------------------------------


@pytest.mark.parametrize(
    "metadata, error, why",
    [
        (
            {"redirect_uris": ["http://evil.example/cb"]},
            "invalid_redirect_uri",
            "plain http to a host that is not loopback",
        ),
        ({"redirect_uris": ["http://127.0.0.1@evil.example/cb"]}, "invalid_redirect_uri", "has userinfo"),
        ({"redirect_uris": ["https://user:pw@client.example/cb"]}, "invalid_redirect_uri", "has userinfo"),
        ({"redirect_uris": ["com.example.app:/cb"]}, "invalid_redirect_uri", "https, or http to a loopback"),
        ({"grant_types": ["password"]}, "invalid_client_metadata", "'password' are not offered"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata", "'client_credentials' are not offered"),
        ({"grant_types": ["implicit"], "response_types": ["token"]}, "invalid_client_metadata", "'implicit' are not"),
        ({"grant_types": ["authorization_code", "password"]}, "invalid_client_metadata", "'password' are not offered"),
        ({"response_types": ["token"]}, "invalid_client_metadata", "only the response type 'code'"),
    ],
)
def test_a_registration_outside_rfc_8252_and_9700_is_refused_and_registers_nothing(live, metadata, error, why):
    response = register(live, **metadata)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == error and why in response.json()["error_description"]
    assert Application.objects.count() == 0


@pytest.mark.parametrize(
    "uri",
    ["http://127.0.0.1:53682/callback", "http://[::1]:8080/cb", "http://localhost:1/cb", "https://client.example/cb"],
)
def test_https_and_loopback_redirects_are_registered(live, uri):
    assert register(live, redirect_uris=[uri]).status_code == 201


def test_a_public_client_is_registered_without_a_secret(live):
    answer = register(live)
    assert answer.status_code == 201 and "client_secret" not in answer.json()
    app = Application.objects.get(client_id=answer.json()["client_id"])
    assert app.client_type == "public" and app.client_secret == "" and app.hash_client_secret is False


def test_a_confidential_client_gets_a_cheaply_hashed_secret_that_still_authenticates_it(live):
    answer = register(live, token_endpoint_auth_method="client_secret_post")
    assert answer.status_code == 201 and answer.json()["client_secret"]
    client_id, secret = answer.json()["client_id"], answer.json()["client_secret"]
    stored = Application.objects.get(client_id=client_id).client_secret
    assert stored != secret and identify_hasher(stored).algorithm == "pbkdf2_sha256_client_secret"

    def token_error(client_secret: str) -> str:
        return httpx.post(
            f"{live}/oauth/token/",
            data={
                "grant_type": "authorization_code",
                "code": "no-such-code",
                "redirect_uri": REDIRECT_URI,
                "client_id": client_id,
                "client_secret": client_secret,
                "code_verifier": "v" * 43,
            },
            timeout=30,
        ).json()["error"]

    assert token_error(secret) == "invalid_grant"  # the client authenticated; only the code is wrong
    wrong = secret[:-1] + ("y" if secret.endswith("x") else "x")  # never the secret itself (1 in 64 ends in "x")
    assert token_error(wrong) == "invalid_client"


def _register_from(live: str, source: str) -> int:
    """One registration sent from `source` (a loopback address of its own), as another machine would."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=30) as client:
        body = {"client_name": "cli", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
        return client.post(f"{live}/oauth/register/", json=body).status_code


@pytest.fixture
def refusals_forgotten():
    from people.oauth import forget_refused_addresses

    forget_refused_addresses()
    yield
    forget_refused_addresses()  # the server runs in this process: the next test starts with a clean slate


def test_registrations_are_rate_limited_per_address(live, settings, refusals_forgotten):
    settings.HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR = 2
    assert [_register_from(live, "127.0.0.1") for _ in range(3)] == [201, 201, 429]
    refused = register(live)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "3600"
    assert "HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR" in refused.json()["error_description"]
    assert Application.objects.count() == 2
    # Another address has its own share.
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))  # loopback is 127.0.0.0/8 on Linux
    assert _register_from(live, "127.0.0.2") == 201
    assert set(ClientRegistrationAttempt.objects.values_list("address", flat=True)) == {"127.0.0.1", "127.0.0.2"}
    # A refused address is refused again from memory, without a row; when its hour has passed (here: the
    # rows are gone and the memory cleared), it registers again.
    assert _register_from(live, "127.0.0.1") == 429
    assert ClientRegistrationAttempt.objects.filter(address="127.0.0.1").count() == 2
    from people.oauth import forget_refused_addresses

    ClientRegistrationAttempt.objects.all().delete()
    forget_refused_addresses()
    assert _register_from(live, "127.0.0.1") == 201


def test_a_replayed_code_revokes_every_token_issued_from_it(live):
    make_person("olga", "reader", password=PASSWORD)
    client_id = register(live).json()["client_id"]
    verifier, challenge = pkce()
    code = authorize(live, client_id, f"{live}/mcp/brain", challenge)["code"]
    first = exchange(live, client_id, code, verifier)
    assert first.status_code == 200, first.text
    token, refresh = first.json()["access_token"], first.json()["refresh_token"]
    assert mcp_post(f"{live}/mcp/brain", rpc("tools/list"), headers=bearer(token)).status_code == 200
    # The refresh token was used once too: its successor is issued from the same code.
    rotated = httpx.post(
        f"{live}/oauth/token/",
        data={"grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id},
        timeout=30,
    )
    assert rotated.status_code == 200, rotated.text
    newer = rotated.json()["access_token"]

    replay = exchange(live, client_id, code, verifier)

    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    for issued in (token, newer):
        assert mcp_post(f"{live}/mcp/brain", rpc("tools/list"), headers=bearer(issued)).status_code == 401
    again = httpx.post(
        f"{live}/oauth/token/",
        data={"grant_type": "refresh_token", "client_id": client_id, "refresh_token": rotated.json()["refresh_token"]},
        timeout=30,
    )
    assert again.status_code == 400
    assert not AccessToken.objects.filter(user__isnull=False).exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()
    assert RedeemedAuthorizationCode.objects.get().replayed_at is not None


def test_one_issuer_everywhere(live):
    make_person("olga", "reader", password=PASSWORD)
    root = httpx.get(f"{live}/.well-known/oauth-authorization-server", timeout=30).json()
    for endpoint in ("brain", "supervisor", "routing"):
        below = httpx.get(f"{live}/.well-known/oauth-authorization-server/mcp/{endpoint}", timeout=30)
        assert below.status_code == 200 and below.json() == root
    assert root["issuer"] == live
    client_id = register(live).json()["client_id"]
    assert authorize(live, client_id, f"{live}/mcp/brain", pkce()[1])["iss"] == root["issuer"]


def test_a_registration_beyond_the_lane_is_answered_503_at_once_rather_than_queued(live):
    from people.oauth import registration_lane

    assert registration_lane.try_enter()  # another client's registration, running in this process
    try:
        busy = register(live)
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
        assert busy.json()["error"] == "temporarily_unavailable"
        assert Application.objects.count() == 0 and ClientRegistrationAttempt.objects.count() == 0
    finally:
        registration_lane.leave()
    assert register(live).status_code == 201


def test_a_consent_form_edited_to_another_redirect_shows_the_error_and_sends_nobody_anywhere(live):
    make_person("olga", "reader", password=PASSWORD)
    client_id = register(live).json()["client_id"]
    with httpx.Client(base_url=live, follow_redirects=False, timeout=30) as browser:
        browser.cookies.update(_signed_in_cookies(live, "olga"))
        page = browser.get(
            "/oauth/authorize/",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "state": "s",
                "scope": "brain:read",
                "code_challenge": pkce()[1],
                "code_challenge_method": "S256",
                "resource": f"{live}/mcp/brain",
            },
        )
        form = {name: html.unescape(value) for name, value in HIDDEN.findall(page.text)}
        form.update(allow="Authorize", resource=f"{live}/", redirect_uri="https://evil.example/cb")
        answer = browser.post("/oauth/authorize/", data=form)
    assert answer.status_code == 400 and 'id="oauth-error"' in answer.text
    assert "evil.example" not in answer.text.split('id="oauth-error"')[1] and "oauth-continue-link" not in answer.text
    assert not Grant.objects.exists()


def test_the_token_endpoint_takes_the_bound_resource_in_another_spelling_and_refuses_a_wider_one(live):
    make_person("olga", "reader", password=PASSWORD)
    client_id = register(live).json()["client_id"]
    verifier, challenge = pkce()
    code = authorize(live, client_id, f"{live}/mcp/brain", challenge)["code"]
    wider = httpx.post(
        f"{live}/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": f"{live}/",
        },
        timeout=30,
    )
    assert wider.status_code == 400 and wider.json()["error"] == "invalid_target"
    verifier, challenge = pkce()
    code = authorize(live, client_id, f"{live}/mcp/brain", challenge)["code"]
    slashed = httpx.post(
        f"{live}/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": f"{live}/mcp/brain/",
        },
        timeout=30,
    )
    assert slashed.status_code == 200, slashed.text
    assert AccessToken.objects.get(user__isnull=False).resource == [f"{live}/mcp/brain"]


# --- issue 46, finding 9: RFC 7592 management applies the registration rules ------------------------------


@pytest.mark.parametrize(
    "metadata, error",
    [
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["http://127.0.0.1@evil.example/cb"]}, "invalid_redirect_uri"),
        ({"grant_types": ["password"]}, "invalid_client_metadata"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
        ({"grant_types": ["implicit"]}, "invalid_client_metadata"),
        ({"grant_types": ["urn:ietf:params:oauth:grant-type:device_code"]}, "invalid_client_metadata"),
        ({"response_types": ["token"]}, "invalid_client_metadata"),
    ],
)
def test_updating_a_registration_applies_the_registration_rules_and_changes_nothing(live, metadata, error):
    registered = register(live).json()
    body = {
        "client_name": "cli",
        "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **metadata,
    }
    answer = httpx.put(
        registered["registration_client_uri"],
        json=body,
        timeout=30,
        headers=bearer(registered["registration_access_token"]),
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == error
    application = Application.objects.get(client_id=registered["client_id"])
    assert application.redirect_uris == REDIRECT_URI and application.authorization_grant_type == "authorization-code"


def test_updating_a_registration_within_the_rules_still_works_and_needs_its_token(live):
    registered = register(live).json()
    body = {
        "client_name": "renamed",
        "redirect_uris": ["https://client.example/cb"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    }
    assert httpx.put(registered["registration_client_uri"], json=body, timeout=30).status_code == 401
    answer = httpx.put(
        registered["registration_client_uri"],
        json=body,
        timeout=30,
        headers=bearer(registered["registration_access_token"]),
    )
    assert answer.status_code == 200, answer.text
    assert Application.objects.get(client_id=registered["client_id"]).redirect_uris == "https://client.example/cb"
