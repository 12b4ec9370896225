"""The plugin's hook route (POST /api/hooks/<event>) with people's tokens: who logged, and what a scope opens."""

from __future__ import annotations

import uuid

import httpx

from brain.actions import do_ingest_note
from sessions.models import AgentSession, SessionEntry
from tests.people.conftest import bearer, make_person, token_for

CWD = "/home/alice/src/ledgerly"


def hook(base: str, event: str, session_id: str, token: str, **fields) -> httpx.Response:
    body = {"session_id": session_id, "transcript_path": "/tmp/t.jsonl", "cwd": CWD, "hook_event_name": event, **fields}
    return httpx.post(f"{base}/api/hooks/{event}", json=body, headers=bearer(token), timeout=30)


def test_a_hook_posted_with_alices_token_logs_her_session_and_context_needs_brain_read(live):
    make_person("alice")
    do_ingest_note(title="Ledgerly rounds per line", body="Ledgerly rounds currency per invoice line.", wing="concepts")
    writer = token_for("alice", "sessions:write")
    reader_writer = token_for("alice", "sessions:write", "brain:read")

    only_write = str(uuid.uuid4())
    answer = hook(live, "SessionStart", only_write, writer, source="startup")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {}  # logged, but no brain content for a token that may not read it
    assert AgentSession.objects.get(external_id=only_write).started_by.username == "alice"
    assert SessionEntry.objects.get(session__external_id=only_write).logged_by == "alice"

    both = str(uuid.uuid4())
    answer = hook(live, "SessionStart", both, reader_writer, source="startup")
    assert "ledgerly-rounds-per-line" in answer.json()["hookSpecificOutput"]["additionalContext"]


def test_a_token_without_sessions_write_is_refused_and_nothing_is_logged(live):
    make_person("bob")
    reader = token_for("bob", "brain:read")
    session_id = str(uuid.uuid4())
    answer = hook(live, "UserPromptSubmit", session_id, reader, prompt="hello")
    assert answer.status_code == 403
    assert "sessions:write" in answer.headers["WWW-Authenticate"]
    assert not AgentSession.objects.filter(external_id=session_id).exists()
    assert hook(live, "UserPromptSubmit", session_id, "hgp_not-a-real-token").status_code == 401


def test_an_empty_bearer_is_no_credential_open_without_tokens_and_401_with_them(asgi_server, settings):
    """`Bearer ` with nothing after it is what a client with an empty token variable sends (the plugin's .mcp.json)."""
    from tests.conftest import mcp_post, rpc

    settings.BRAIN_MCP_TOKEN = ""
    open_answer = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/list", {}), {"Authorization": "Bearer"})
    assert open_answer.status_code == 200 and "result" in open_answer.json()
    settings.BRAIN_MCP_TOKEN = "a-server-token-for-tests"
    closed = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/list", {}), {"Authorization": "Bearer"})
    assert closed.status_code == 401
