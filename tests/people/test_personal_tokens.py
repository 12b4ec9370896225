"""Acceptance 1: a person's own token writes as that person; scopes hold; revoked and expired tokens open nothing."""

from __future__ import annotations

import io
from datetime import timedelta

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from brain.models import Note
from people.models import CredentialUse, PersonalToken
from tests.conftest import call_tool, mcp_post, rest_error, rpc
from tests.people.conftest import SERVICE_TOKENS, bearer, make_person, token_for

NOTE = {"title": "Pin the event loop policy", "body": "Set the policy once, at start-up."}


def test_a_token_made_with_the_command_writes_notes_whose_author_is_alice(live):
    alice = make_person("alice", "reviewer")  # brain:write needs a role that writes notes
    token = token_for("alice", "brain:read", "brain:write")
    assert token.startswith("hgp_") and " " not in token

    result = call_tool(f"{live}/mcp/brain", "brain_write", NOTE, headers=bearer(token))
    assert result["isError"] is False, result
    slug = result["structuredContent"]["slug"]
    assert result["structuredContent"]["author"] == "alice"
    note = Note.objects.get(slug=slug)
    assert note.created_by == alice

    detail = call_tool(f"{live}/mcp/brain", "brain_get", {"slug": slug}, headers=bearer(token))
    assert detail["structuredContent"]["author"] == "alice"

    rest = httpx.get(f"{live}/notes/{slug}", headers=bearer(token), timeout=30)
    assert rest.status_code == 200 and rest.json()["author"] == "alice"

    admin = make_person("root", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(admin)
    page = browser.get(reverse("brain-note", args=[note.pk])).content.decode()
    assert '<dd id="note-author">alice</dd>' in page
    changelist = browser.get("/admin/brain/note/").content.decode()
    assert slug in changelist and "alice" in changelist
    mine = Client()
    mine.force_login(alice)
    queue = mine.get(reverse("brain-review"), {"author": "alice"}).content.decode()
    assert NOTE["title"] in queue


def test_only_a_hash_and_a_prefix_are_stored_and_use_is_recorded(live):
    make_person("alice")
    token = token_for("alice", "brain:read")
    stored = PersonalToken.objects.get()
    assert token not in (stored.token_hash, stored.prefix) and token.startswith(stored.prefix)
    assert stored.expires_at is not None  # tokens expire by default
    assert timedelta(days=89) < stored.expires_at - timezone.now() <= timedelta(days=90)

    response = mcp_post(f"{live}/mcp/brain", rpc("tools/list"), headers=bearer(token))
    assert response.status_code == 200
    stored.refresh_from_db()
    assert stored.last_used_at is not None and stored.last_used_ip == "127.0.0.1"
    use = CredentialUse.objects.get()
    assert (use.user.username, use.kind, use.path) == ("alice", "token", "/mcp/brain")
    assert stored.prefix in use.credential


def test_a_read_only_token_gets_a_clear_error_on_brain_write_and_nothing_is_written(live):
    make_person("bob")
    token = token_for("bob", "brain:read")
    result = call_tool(f"{live}/mcp/brain", "brain_write", NOTE, headers=bearer(token))
    assert result["isError"] is True
    message = result["content"][0]["text"]
    assert "brain_write needs the brain:write scope" in message and "brain:read" in message
    assert Note.objects.count() == 0
    # REST says the same with a 403 and the scope it needs in the challenge.
    response = httpx.post(f"{live}/write", json=NOTE, headers=bearer(token), timeout=30)
    assert response.status_code == 403
    assert rest_error(response)["code"] == "insufficient_scope"
    assert 'scope="brain:write"' in response.headers["WWW-Authenticate"]
    assert Note.objects.count() == 0
    # Reading works.
    assert call_tool(f"{live}/mcp/brain", "brain_query", {"query": "loop"}, headers=bearer(token))["isError"] is False


def test_a_token_without_the_endpoints_scope_is_refused_there(live):
    make_person("carol", "reviewer")
    token = token_for("carol", "brain:read", "brain:write")
    response = mcp_post(f"{live}/mcp/supervisor", rpc("tools/list"), headers=bearer(token))
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    assert "supervisor:run" in rest_error(response)["message"]


ENDPOINTS = [
    ("post_mcp", "/mcp/brain"),
    ("post_mcp", "/mcp/supervisor"),
    ("post_mcp", "/mcp/routing"),
    ("post_json", "/query"),
    ("post_json", "/write"),
    ("post_json", "/sessions/s-1/entries"),
    ("get", "/notes/anything"),
    ("get", "/routing/stats"),
]


def _call(base: str, how: str, path: str, token: str) -> httpx.Response:
    if how == "post_mcp":
        return mcp_post(f"{base}{path}", rpc("tools/list"), headers=bearer(token))
    if how == "post_json":
        return httpx.post(f"{base}{path}", json={"query": "x", "kind": "note"}, headers=bearer(token), timeout=30)
    return httpx.get(f"{base}{path}", headers=bearer(token), timeout=30)


ALL_SCOPES = ("brain:read", "brain:write", "sessions:write", "supervisor:run", "routing:run")


def test_a_revoked_token_gets_401_on_every_endpoint(live):
    make_person("dave", "reviewer", "operator")  # every scope: a writer's and an operator's role
    token = token_for("dave", *ALL_SCOPES)
    assert _call(live, "post_mcp", "/mcp/routing", token).status_code == 200  # it worked before
    prefix = PersonalToken.objects.get().prefix
    call_command("token", "revoke", prefix, stdout=io.StringIO())
    for how, path in ENDPOINTS:
        response = _call(live, how, path, token)
        assert response.status_code == 401, (path, response.text)
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"], path
        assert "resource_metadata=" in response.headers["WWW-Authenticate"], path
    assert Note.objects.count() == 0


def test_an_expired_token_gets_401_on_every_endpoint(live):
    make_person("erin", "reviewer", "operator")
    token = token_for("erin", *ALL_SCOPES, extra=("--expires-days", "1"))
    PersonalToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    for how, path in ENDPOINTS:
        assert _call(live, how, path, token).status_code == 401, path


def test_a_deactivated_person_s_token_opens_nothing(live):
    frank = make_person("frank")
    token = token_for("frank", "brain:read")
    frank.is_active = False
    frank.save()
    assert _call(live, "post_mcp", "/mcp/brain", token).status_code == 401


def test_the_environment_tokens_remain_a_service_identity(live):
    result = call_tool(f"{live}/mcp/brain", "brain_write", NOTE, headers=bearer(SERVICE_TOKENS["BRAIN_MCP_TOKEN"]))
    assert result["isError"] is False
    assert Note.objects.get().created_by is None
    detail = call_tool(
        f"{live}/mcp/brain",
        "brain_get",
        {"slug": result["structuredContent"]["slug"]},
        headers=bearer(SERVICE_TOKENS["BRAIN_MCP_TOKEN"]),
    )
    assert detail["structuredContent"]["author"] is None
    assert CredentialUse.objects.count() == 0  # the service names no person: nothing to audit


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["token", "create", "alice", "--scope", "brain:admin"], "unknown scope(s): brain:admin"),
        (["token", "create", "alice"], "at least one scope"),
        (["token", "create", "alice", "--scope", "brain:read", "--expires-days", "0"], "1 to 366 days"),
        (["token", "create", "alice", "--scope", "brain:read", "--expires-days", "9999"], "1 to 366 days"),
        (["token", "create", "nobody", "--scope", "brain:read"], "No user 'nobody'"),
        (["token", "create", "alice", "--scope", "brain:read", "--name", ""], "needs a name"),
        (["token", "revoke", "hgp_nothere"], "No token"),
    ],
)
def test_the_command_refuses_bad_input_and_writes_nothing(db, args, problem):
    make_person("alice")
    with pytest.raises(CommandError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        call_command(*args, stdout=io.StringIO())
    assert PersonalToken.objects.count() == 0


def test_the_command_lists_tokens_without_showing_them(db):
    make_person("alice")
    token = token_for("alice", "brain:read", extra=("--name", "laptop"))
    out = io.StringIO()
    call_command("token", "list", "alice", stdout=out)
    listing = out.getvalue()
    assert "laptop" in listing and PersonalToken.objects.get().prefix in listing and "active" in listing
    assert token not in listing


def test_session_logs_name_the_person_and_need_sessions_write(live):
    from sessions.models import AgentSession, SessionEntry

    hugo = make_person("hugo")
    hooks = token_for("hugo", "brain:read", "sessions:write")
    reader = token_for("hugo", "brain:read")
    logged = call_tool(
        f"{live}/mcp/brain",
        "session_log",
        {"session_id": "s-hugo", "kind": "decision", "message": "pin it"},
        headers=bearer(hooks),
    )
    assert logged["isError"] is False, logged
    rest = httpx.post(
        f"{live}/sessions/s-hugo/entries",
        json={"kind": "note", "message": "via REST"},
        headers=bearer(hooks),
        timeout=30,
    )
    assert rest.status_code == 201, rest.text
    session = AgentSession.objects.get(external_id="s-hugo")
    assert session.started_by == hugo
    assert list(SessionEntry.objects.order_by("seq").values_list("logged_by", flat=True)) == ["hugo", "hugo"]

    refused = call_tool(
        f"{live}/mcp/brain", "session_log", {"session_id": "s-hugo", "kind": "note"}, headers=bearer(reader)
    )
    assert refused["isError"] is True and "sessions:write" in refused["content"][0]["text"]
    refused_rest = httpx.post(
        f"{live}/sessions/s-hugo/entries", json={"kind": "note"}, headers=bearer(reader), timeout=30
    )
    assert refused_rest.status_code == 403
    assert SessionEntry.objects.count() == 2
    # Reading the log back needs sessions:read (issue 35), and it is the owner's.
    assert httpx.get(f"{live}/sessions/s-hugo/entries", headers=bearer(reader), timeout=30).status_code == 403
    own = token_for("hugo", "sessions:read")
    assert httpx.get(f"{live}/sessions/s-hugo/entries", headers=bearer(own), timeout=30).status_code == 200

    browser = Client()
    browser.force_login(hugo)
    assert "s-hugo" in browser.get(reverse("sessions-list"), {"mine": "1"}).content.decode()
    other = make_person("ines")
    browser.force_login(other)
    assert "s-hugo" not in browser.get(reverse("sessions-list"), {"mine": "1"}).content.decode()


def test_old_audit_rows_are_purged_by_the_people_apps_schedule(db, settings):
    """Once by the worker's heartbeat, now by a schedule of the people app's own (issue 49: the core calls no app)."""
    from hyperguild.actions import do_ensure_schedules
    from people.tasks import PURGE_NAME, purge_credential_uses

    assert PURGE_NAME in do_ensure_schedules()

    settings.HYPERGUILD_AUDIT_KEEP_DAYS = 30
    alice = make_person("alice")
    old = CredentialUse.objects.create(
        user=alice,
        kind="token",
        credential="hgp_x",
        method="POST",
        path="/mcp/brain",
        at=timezone.now() - timedelta(days=31),
    )
    recent = CredentialUse.objects.create(
        user=alice, kind="token", credential="hgp_x", method="POST", path="/mcp/brain"
    )
    assert purge_credential_uses() == 1
    assert list(CredentialUse.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not CredentialUse.objects.filter(pk=old.pk).exists()
