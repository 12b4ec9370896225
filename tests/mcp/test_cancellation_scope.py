"""Issue 17 problem 4: a cancellation stops only the calls of the client that sent it, whatever the id.

Two clients share one token and both use JSON-RPC id 42 (clients reuse small ids). Before the
fix, the second client's `notifications/cancelled` for its id 42 stopped the first client's call.
Calls and cancellations are now keyed on the client (its Mcp-Session-Id, handed out on initialize).
"""

from __future__ import annotations

import threading

import pytest

from hyperguild.mcp.cancellation import request_id_key, session_caller_key
from hyperguild.models import McpCancellation
from tests.conftest import mcp_post, parse_sse, rpc

pytestmark = pytest.mark.django_db(transaction=True)


def cancel(url: str, request_id, session: str):
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "esc"},
    }
    return mcp_post(url, message, {"Mcp-Session-Id": session})


def test_another_clients_cancellation_of_the_same_id_does_not_stop_the_call(selftest_endpoint):
    _, state, url = selftest_endpoint
    outcome: dict = {}

    def alice_calls() -> None:
        message = rpc("tools/call", {"name": "wait_for_cancel", "arguments": {}, "_meta": {"progressToken": 1}}, 42)
        outcome["response"] = mcp_post(url, message, {"Mcp-Session-Id": "alice-session"})

    caller = threading.Thread(target=alice_calls)
    caller.start()
    assert state.started.wait(10)

    assert cancel(url, 42, "bob-session").status_code == 202
    # Neither this process nor the cross-replica watcher (one poll a second) stops alice's call.
    assert not state.cancel_seen.wait(2.5)
    assert McpCancellation.objects.get().request_id == request_id_key(42, session_caller_key("bob-session"))

    assert cancel(url, 42, "alice-session").status_code == 202
    assert state.cancel_seen.wait(10)
    caller.join(10)
    final = parse_sse(outcome["response"].text)[-1]
    assert final["result"]["isError"] is True and "cancelled" in final["result"]["content"][0]["text"]


def test_initialize_hands_out_a_session_id_and_keeps_one_the_client_sent(asgi_server):
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    fresh = mcp_post(f"{asgi_server}/mcp/brain", rpc("initialize", init))
    again = mcp_post(f"{asgi_server}/mcp/brain", rpc("initialize", init))
    assert fresh.headers["mcp-session-id"] != again.headers["mcp-session-id"]
    kept = mcp_post(f"{asgi_server}/mcp/brain", rpc("initialize", init), {"Mcp-Session-Id": "mine"})
    assert "mcp-session-id" not in kept.headers
