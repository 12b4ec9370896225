"""Issue 35, finding 2: the whole OAuth flow in a real browser (Debian's chromium), as Claude Code runs it.

Claude Code registers itself as a public client with a loopback redirect, listens on that port, opens the
person's browser on /oauth/authorize/ with PKCE and `resource`, and waits for the code. Here the listener
is a small HTTP server on 127.0.0.1 and the browser is chromium: the person signs in, reads the consent
page and clicks Allow. Before the fix the browser refused to follow the consent POST's 302 to the
loopback address (CSP `form-action 'self'`), so the listener never heard back.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from django.contrib.auth import get_user_model

from tests.conftest import mcp_post, rpc
from tests.e2e.conftest import PASSWORD, shot

pytestmark = [pytest.mark.e2e]

SERVICE_TOKENS = {"BRAIN_MCP_TOKEN": "brain-env", "SUPERVISOR_MCP_TOKEN": "sup-env", "ROUTING_MCP_TOKEN": "route-env"}


@pytest.fixture
def live(asgi_server, settings, transactional_db):
    from brain import bm25

    for name, value in SERVICE_TOKENS.items():
        setattr(settings, name, value)
    settings.BRAIN_EMBEDDER = "off"
    bm25.reset()
    yield asgi_server
    bm25.reset()


class Callback:
    """The client's loopback listener: remembers the query of the first request to /callback."""

    def __init__(self) -> None:
        self.received = threading.Event()
        self.query: dict[str, str] = {}
        callback = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                parts = urlsplit(self.path)
                if parts.path == "/callback" and not callback.received.is_set():
                    callback.query = {key: values[0] for key, values in parse_qs(parts.query).items()}
                    callback.received.set()
                body = b"<!doctype html><title>done</title><p id='done'>Signed in. You can close this window.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Callback:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_person_completes_claude_codes_oauth_flow_in_chromium_without_a_csp_violation(live, browser_page):
    get_user_model().objects.create_user("olga", password=PASSWORD)
    console: list[str] = []
    browser_page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    browser_page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    # What DevTools' console shows, CSP reports included (a blocked form redirect is logged there, not to
    # the page's console API), and each page's own securitypolicyviolation events, said on its console.
    devtools = browser_page.context.new_cdp_session(browser_page)
    devtools.on(
        "Log.entryAdded", lambda event: console.append(f"log {event['entry']['level']}: {event['entry']['text']}")
    )
    devtools.send("Log.enable")
    browser_page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => console.error("
        "'Content Security Policy violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI));"
    )
    resource = f"{live}/mcp/brain"
    with Callback() as callback:
        # 1. Dynamic registration of a public client with a loopback redirect, as Claude Code sends it.
        registered = httpx.post(
            f"{live}/oauth/register/",
            json={
                "client_name": "Claude Code (hyperguild)",
                "redirect_uris": [callback.uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            },
            timeout=30,
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        assert "client_secret" not in registered.json()

        # 2. The browser opens the authorization URL: PKCE (S256), state and resource.
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        state = secrets.token_urlsafe(16)
        browser_page.goto(
            f"{live}/oauth/authorize/?"
            + urlencode(
                {
                    "response_type": "code",
                    "client_id": client_id,
                    "redirect_uri": callback.uri,
                    "state": state,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "resource": resource,
                    "scope": "brain:read brain:write sessions:write",
                }
            )
        )

        # 3. Sign in on hyperguild's page, then the consent page.
        browser_page.wait_for_selector("#login-form")
        browser_page.fill("#id_username", "olga")
        browser_page.fill("#id_password", PASSWORD)
        browser_page.click("#login-form input[type=submit]")
        browser_page.wait_for_selector("#consent")
        assert browser_page.inner_text("#consent-resource") == resource
        assert browser_page.inner_text("#consent-redirect") == callback.uri
        shot(browser_page, "oauth-consent")

        # 4. Allow: the browser goes back to the client's listener with the code.
        browser_page.click("#allow")
        assert callback.received.wait(20), f"the loopback callback heard nothing; console: {console}"
        browser_page.wait_for_selector("#done")
        shot(browser_page, "oauth-back-at-the-client")

    assert callback.query["state"] == state and callback.query["iss"] == live
    assert not any("Content Security Policy" in line for line in console), console

    # 5. Code → token, with the verifier; the token lists tools on its one endpoint, and only there.
    token = httpx.post(
        f"{live}/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": callback.query["code"],
            "redirect_uri": callback.uri,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": resource,
        },
        timeout=30,
    )
    assert token.status_code == 200, token.text
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    listed = mcp_post(resource, rpc("tools/list"), headers=headers)
    assert listed.status_code == 200
    assert "brain_query" in {tool["name"] for tool in listed.json()["result"]["tools"]}
    for other in ("supervisor", "routing"):
        assert mcp_post(f"{live}/mcp/{other}", rpc("tools/list"), headers=headers).status_code == 401
