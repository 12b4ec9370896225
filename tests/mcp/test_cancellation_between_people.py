"""Issue 35 finding 5: one person's token never cancels another person's call.

Alice and Bob each hold their own token and call from the same address with the same client (so
the address and User-Agent are the same, and neither sends an Mcp-Session-Id). Bob's
`notifications/cancelled` for Alice's request id, or his `tasks/cancel` for her task, changes
nothing; Alice's own does. On the handshake revision (2025-11-25) and on 2026-07-28.
"""

from __future__ import annotations

import threading

import pytest

from hyperguild.models import McpCancellation
from people.actions import do_create_personal_token
from tests.conftest import mcp_post, parse_sse, rpc
from tests.mcp.test_revisions import envelope, modern_headers
from tests.people.conftest import make_person

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def token(username: str) -> dict:
    secret = do_create_personal_token(make_person(username), name="laptop", scopes=["brain:read"]).secret
    return {"Authorization": f"Bearer {secret}"}


def call_message(revision: str, request_id) -> tuple[dict, dict]:
    meta: dict = {"progressToken": 1}
    headers: dict = {}
    if revision == "2026-07-28":
        meta |= envelope()
        headers = modern_headers("tools/call", "wait_for_cancel")
    return rpc("tools/call", {"name": "wait_for_cancel", "arguments": {}, "_meta": meta}, request_id), headers


def cancel_message(revision: str, request_id) -> tuple[dict, dict]:
    params: dict = {"requestId": request_id, "reason": "Esc"}
    headers: dict = {}
    if revision == "2026-07-28":
        params["_meta"] = envelope()
        headers = modern_headers("notifications/cancelled")
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}, headers


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_another_persons_cancellation_of_the_same_id_does_not_stop_the_call(selftest_endpoint, settings, revision):
    settings.BRAIN_MCP_TOKEN = "service-secret"  # the selftest endpoint's door: nothing open without a token
    _, state, url = selftest_endpoint
    alice, bob = token("alice"), token("bob")
    outcome: dict = {}

    def alice_calls() -> None:
        message, headers = call_message(revision, 7)
        outcome["response"] = mcp_post(url, message, {**headers, **alice})

    caller = threading.Thread(target=alice_calls)
    caller.start()
    assert state.started.wait(10)

    message, headers = cancel_message(revision, 7)
    assert mcp_post(url, message, {**headers, **bob}).status_code == 202
    # Neither this process nor the cross-replica watcher (one poll a second) stops Alice's call.
    assert not state.cancel_seen.wait(2.5)
    assert McpCancellation.objects.count() == 1

    assert mcp_post(url, message, {**headers, **alice}).status_code == 202
    assert state.cancel_seen.wait(10)
    caller.join(10)
    final = parse_sse(outcome["response"].text)[-1]
    assert final["result"]["isError"] is True and "cancelled" in final["result"]["content"][0]["text"]


def test_another_persons_tasks_cancel_does_not_stop_the_task(selftest_endpoint, settings):
    settings.BRAIN_MCP_TOKEN = "service-secret"
    _, state, url = selftest_endpoint
    alice, bob = token("alice"), token("bob")

    def post(method: str, params: dict, name: str, headers: dict):
        body = {**params, "_meta": envelope(TASKS)}
        return mcp_post(url, rpc(method, body), {**modern_headers(method, name), **headers})

    handle = post("tools/call", {"name": "wait_for_cancel", "arguments": {}}, "wait_for_cancel", alice).json()["result"]
    assert state.started.wait(10)
    refused = post("tasks/cancel", {"taskId": handle["taskId"]}, handle["taskId"], bob)
    assert refused.json()["error"]["code"] == -32602  # unknown to Bob: he cannot even see it
    assert not state.cancel_seen.wait(2.5)
    assert post("tasks/cancel", {"taskId": handle["taskId"]}, handle["taskId"], alice).status_code == 200
    assert state.cancel_seen.wait(10)
