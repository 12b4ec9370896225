"""The engine's one door (`hyperguild.mcp.engine.receive`): a body and the caller's facts in, what to send out.

No HTTP here: these tests show that everything JSON-RPC (parsing, classification, screening, notifications,
the revision, dispatch) is answered by the engine alone; the HTTP tests check the same paths through the view.
"""

from __future__ import annotations

import json

import pytest

from hyperguild.mcp.engine import Answer, Call, Caller, receive

pytestmark = pytest.mark.django_db(transaction=True)

MODERN = "2026-07-28"


def body(method: str, params: dict | None = None, request_id: int | None = 1) -> bytes:
    message: dict = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message).encode()


def test_a_tool_call_is_run_by_the_engine_and_answered_200(selftest_endpoint):
    endpoint, _, _ = selftest_endpoint
    call = receive(endpoint, body("tools/call", {"name": "echo", "arguments": {"text": "hi"}}), Caller())
    assert isinstance(call, Call) and not call.streams
    answer = call.run()
    assert answer.status == 200 and not answer.opens_session
    assert answer.message is not None and answer.message["id"] == 1
    assert answer.message["result"]["structuredContent"] == {"text": "hi", "count": 1}
    assert (answer.record.method, answer.record.tool, answer.record.status) == ("tools/call", "echo", "ok")


def test_a_notification_is_answered_with_nothing_to_send(selftest_endpoint):
    endpoint, _, _ = selftest_endpoint
    answer = receive(endpoint, body("notifications/initialized", request_id=None), Caller())
    assert isinstance(answer, Answer)
    assert (answer.message, answer.status, answer.record.method) == (None, 202, "notifications/initialized")


@pytest.mark.parametrize(
    ("raw", "status", "code", "answered_id"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', 400, -32700, None),  # not JSON
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', 400, -32600, None),  # a batch
        (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo\\u0000"}}', 200, -32602, 7),
    ],
)
def test_a_body_that_is_not_one_clean_request_is_refused_before_dispatch(
    selftest_endpoint, raw, status, code, answered_id
):
    endpoint, _, _ = selftest_endpoint
    answer = receive(endpoint, raw, Caller())
    assert isinstance(answer, Answer) and answer.status == status
    assert answer.message is not None and answer.message["error"]["code"] == code
    assert answer.message["id"] == answered_id


def test_a_handshake_initialize_opens_a_session_and_a_modern_request_does_not(selftest_endpoint):
    endpoint, _, _ = selftest_endpoint
    initialize = receive(
        endpoint,
        body(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        ),
        Caller(),
    )
    assert isinstance(initialize, Call)
    answer = initialize.run()
    assert answer.opens_session and answer.message is not None
    assert answer.message["result"]["protocolVersion"] == "2025-06-18"

    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"}
    discover = receive(endpoint, body("server/discover", {"_meta": meta}), Caller(headers=headers))
    assert isinstance(discover, Call)
    answer = discover.run()
    assert answer.status == 200 and not answer.opens_session
    assert answer.message is not None and answer.message["result"]["resultType"] == "complete"


def test_a_request_in_a_revision_the_server_does_not_speak_is_refused_with_the_transports_status(selftest_endpoint):
    endpoint, _, _ = selftest_endpoint
    headers = {"mcp-protocol-version": "2099-01-01"}
    answer = receive(endpoint, body("tools/list", {}), Caller(headers=headers))
    assert isinstance(answer, Answer) and answer.status == 400
    assert answer.message is not None and answer.message["error"]["code"] == -32022
    assert answer.record.status == "rejected -32022"


def test_a_call_that_asks_for_progress_streams_it_to_emit(selftest_endpoint):
    endpoint, _, _ = selftest_endpoint
    params = {"name": "progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "p1"}}
    call = receive(endpoint, body("tools/call", params), Caller())
    assert isinstance(call, Call) and call.streams
    events: list[dict] = []
    answer = call.run(emit=events.append)
    assert [event["params"]["progressToken"] for event in events] == ["p1"] * len(events) and events
    assert answer.message is not None and answer.message["result"]["isError"] is False


def test_a_call_cancelled_before_it_runs_never_reaches_its_tool(selftest_endpoint):
    endpoint, _, _ = selftest_endpoint
    call = receive(endpoint, body("tools/call", {"name": "echo", "arguments": {"text": "hi"}}), Caller())
    assert isinstance(call, Call)
    call.cancel()
    answer = call.run()
    assert answer.message is not None and answer.message["result"]["isError"] is True
    assert answer.record.status == "cancelled"
