"""session_log over real HTTP: /mcp/brain and POST /sessions/<id>/entries."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.db import connection

from sessions.actions import do_log_entry
from sessions.models import AgentSession, SessionEntry
from tests.conftest import call_tool, mcp_post, rest_error, rpc

TOKEN = "brain-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def brain_token(settings):
    settings.BRAIN_MCP_TOKEN = TOKEN
    return TOKEN


def seqs_of(session_id: str) -> list[int]:
    return list(
        SessionEntry.objects.filter(session__external_id=session_id).order_by("seq").values_list("seq", flat=True)
    )


def test_32_concurrent_session_log_calls_get_sequence_numbers_1_to_32(transactional_db, asgi_server, brain_token):
    url = f"{asgi_server}/mcp/brain"

    def log(i: int) -> dict:
        result = call_tool(url, "session_log", {"session_id": "conc-1", "kind": "note", "message": f"m{i}"}, AUTH, i)
        assert not result.get("isError"), result
        return result["structuredContent"]

    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(log, range(32)))

    assert sorted(r["seq"] for r in results) == list(range(1, 33))
    assert all(r["created"] for r in results)
    assert seqs_of("conc-1") == list(range(1, 33))
    assert AgentSession.objects.get(external_id="conc-1").last_seq == 32


def test_32_threads_each_with_its_own_connection_never_share_or_skip_a_number(transactional_db):
    barrier = threading.Barrier(32)

    def log(i: int) -> int:
        try:
            barrier.wait()
            entry, _ = do_log_entry("conc-db", kind="note", message=str(i), project="p")
            return entry.seq
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=32) as pool:
        seqs = list(pool.map(log, range(32)))

    assert sorted(seqs) == list(range(1, 33))
    assert seqs_of("conc-db") == list(range(1, 33))
    assert AgentSession.objects.filter(external_id="conc-db").count() == 1


def test_a_retried_session_log_call_with_the_same_idempotency_key_writes_nothing_new(
    transactional_db, asgi_server, brain_token
):
    url = f"{asgi_server}/mcp/brain"
    arguments = {"session_id": "retry-1", "kind": "decision", "message": "use pgvector", "idempotency_key": "abc"}
    first = call_tool(url, "session_log", arguments, AUTH)["structuredContent"]
    again = call_tool(url, "session_log", {**arguments, "message": "different"}, AUTH)["structuredContent"]

    assert first["created"] is True and again["created"] is False
    assert again["seq"] == first["seq"] == 1 and again["entry_id"] == first["entry_id"]
    assert SessionEntry.objects.get().message == "use pgvector"


def test_session_log_without_or_with_a_wrong_token_is_refused_and_writes_nothing(
    transactional_db, asgi_server, brain_token
):
    message = rpc("tools/call", {"name": "session_log", "arguments": {"session_id": "x", "kind": "note"}})
    no_token = mcp_post(f"{asgi_server}/mcp/brain", message)
    wrong = mcp_post(f"{asgi_server}/mcp/brain", message, {"Authorization": "Bearer nope"})
    assert no_token.status_code == 401 and wrong.status_code == 401
    assert "Bearer" in no_token.headers["WWW-Authenticate"]
    assert not AgentSession.objects.exists() and not SessionEntry.objects.exists()


@pytest.mark.parametrize(
    "arguments",
    [
        {"session_id": "../etc/passwd", "kind": "note"},
        {"session_id": "ok", "kind": ""},
        {"session_id": "ok", "kind": "note", "surprise": 1},
        {"session_id": "ok", "kind": "note", "message": "x" * 20001},
        {"session_id": "ok", "kind": "note", "data": {"blob": "x" * (65 * 1024)}},
        {"kind": "note"},
    ],
    ids=["path-like id", "empty kind", "unknown field", "message too long", "data too large", "no session"],
)
def test_session_log_rejects_bad_input_and_writes_nothing(transactional_db, asgi_server, brain_token, arguments):
    result = call_tool(f"{asgi_server}/mcp/brain", "session_log", arguments, AUTH)
    assert result["isError"] is True
    assert not SessionEntry.objects.exists() and not AgentSession.objects.exists()


def test_rest_entries_endpoint_appends_and_replays_like_the_tool(transactional_db, asgi_server, brain_token):
    url = f"{asgi_server}/sessions/rest-1/entries"
    body = {"kind": "error", "skill": "tdd_green", "status": "fail", "idempotency_key": "r1", "data": {"n": "ü"}}
    created = httpx.post(url, json=body, headers=AUTH)
    replay = httpx.post(url, json=body, headers=AUTH)
    listed = httpx.get(url, headers=AUTH)

    assert created.status_code == 201 and created.json()["seq"] == 1 and created.json()["created"] is True
    assert replay.status_code == 200 and replay.json()["created"] is False
    assert listed.status_code == 200
    assert [e["seq"] for e in listed.json()["entries"]] == [1]
    assert listed.json()["entries"][0]["data"] == {"n": "ü"}
    assert SessionEntry.objects.get().source == "rest"


def test_rest_entries_endpoint_needs_the_brain_token_and_valid_input(transactional_db, asgi_server, brain_token):
    url = f"{asgi_server}/sessions/rest-2/entries"
    no_token = httpx.post(url, json={"kind": "note"})
    wrong = httpx.post(url, json={"kind": "note"}, headers={"Authorization": "Bearer wrong"})
    bad = httpx.post(url, json={"kind": "note", "status": 5}, headers=AUTH)
    not_object = httpx.post(url, json=["kind"], headers=AUTH)
    bad_id = httpx.post(f"{asgi_server}/sessions/a%20b/entries", json={"kind": "note"}, headers=AUTH)

    assert no_token.status_code == 401 and wrong.status_code == 401
    assert bad.status_code == 400 and "status" in rest_error(bad)["details"]
    assert rest_error(not_object)["code"] == "invalid" and "session_id" in rest_error(bad_id)["details"]
    assert not_object.status_code == 400 and bad_id.status_code == 400
    assert not SessionEntry.objects.exists() and not AgentSession.objects.exists()


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"kind": "note", "data": {"blob": "x" * (64 * 1024)}}, "the limit is 65536. Log a summary instead."),
        ({"kind": "note", "client": {f"k{i}": "v" * 300 for i in range(15)}}, "client metadata is over 4096 bytes"),
    ],
)
def test_mcp_and_rest_refuse_an_entry_over_a_limit_with_the_same_message_and_write_nothing(
    transactional_db, asgi_server, brain_token, fields, said
):
    by_mcp = call_tool(f"{asgi_server}/mcp/brain", "session_log", {"session_id": "big-1", **fields}, AUTH)
    by_rest = httpx.post(f"{asgi_server}/sessions/big-1/entries", json=fields, headers=AUTH, timeout=30)

    assert by_mcp["isError"] is True and said in by_mcp["content"][0]["text"]
    assert by_rest.status_code == 400
    error = rest_error(by_rest)
    assert said in error["message"] and error["code"] == "invalid"
    assert error["message"] == by_mcp["content"][0]["text"]
    assert not SessionEntry.objects.exists() and not AgentSession.objects.exists()
