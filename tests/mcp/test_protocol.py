"""The wire protocol, driven with raw HTTP against the live ASGI server."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tests.conftest import MCP_HEADERS, call_tool, mcp_post, parse_sse, rest_error, rpc

pytestmark = pytest.mark.django_db(transaction=True)

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_initialize_agrees_to_every_supported_version(asgi_server, version):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("initialize", {**INIT, "protocolVersion": version}))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    result = response.json()["result"]
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "hyperguild-brain"
    assert "tools" in result["capabilities"]
    # Handed out so cancellations can be scoped to this client (hyperguild.mcp.cancellation); never required.
    session_id = response.headers["mcp-session-id"]
    assert len(session_id) == 32 and session_id.isalnum()


def test_initialize_offers_the_latest_version_for_an_unknown_one(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/supervisor", rpc("initialize", {**INIT, "protocolVersion": "1999-01-01"}))
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"


def test_all_three_endpoints_answer_with_and_without_a_trailing_slash(asgi_server):
    for name in ("brain", "supervisor", "routing"):
        for suffix in ("", "/"):
            response = mcp_post(f"{asgi_server}/mcp/{name}{suffix}", rpc("ping"))
            assert response.status_code == 200, (name, suffix, response.text)
            assert response.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_an_unknown_endpoint_is_a_json_404(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/nothing", rpc("ping"))
    assert response.status_code == 404
    assert "nothing" in rest_error(response)["message"]


def test_server_discover_without_the_2026_envelope_is_refused_as_2026_says(asgi_server):
    # The header names 2026-07-28, so the request is held to its rules: no _meta is invalid params
    # (test_revisions.py covers the revision layer in full).
    response = mcp_post(
        f"{asgi_server}/mcp/brain", rpc("server/discover", {}), headers={"MCP-Protocol-Version": "2026-07-28"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602


def test_notifications_and_responses_get_202_with_an_empty_body(asgi_server):
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = mcp_post(f"{asgi_server}/mcp/brain", notification)
    assert response.status_code == 202 and response.content == b""
    client_response = {"jsonrpc": "2.0", "id": 7, "result": {}}
    response = mcp_post(f"{asgi_server}/mcp/brain", client_response)
    assert response.status_code == 202 and response.content == b""


def test_malformed_json_is_a_parse_error(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert response.json()["id"] is None


def test_a_batch_is_an_invalid_request(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", [rpc("ping", request_id=1), rpc("ping", request_id=2)])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert "Batch" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
        {"jsonrpc": "2.0", "id": 1},
        "ping",
    ],
)
def test_messages_that_are_not_json_rpc_are_invalid_requests(asgi_server, message):
    response = mcp_post(f"{asgi_server}/mcp/brain", message)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


def test_an_unknown_method_is_method_not_found(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("sampling/createMessage"))
    assert response.json()["error"] == {"code": -32601, "message": "Method not found: sampling/createMessage"}


def test_an_unsupported_protocol_version_header_is_refused(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("ping"), headers={"MCP-Protocol-Version": "1999-01-01"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32022
    assert response.json()["error"]["data"]["requested"] == "1999-01-01"


def test_get_is_405_with_allow_post_and_no_406_whatever_the_accept_header(asgi_server):
    for accept in ("text/event-stream", "application/json", "image/png"):
        response = httpx.get(f"{asgi_server}/mcp/brain", headers={"Accept": accept})
        assert response.status_code == 405, accept
        assert response.headers["allow"] == "POST"


def test_get_without_a_token_is_401_before_405(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "s3cret"
    response = httpx.get(f"{asgi_server}/mcp/brain", headers={"Accept": "text/event-stream"})
    assert response.status_code == 401
    response = httpx.get(f"{asgi_server}/mcp/brain", headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 405


def test_a_post_is_never_redirected(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain/", rpc("ping"))
    assert response.status_code == 200 and not response.history


def test_no_token_is_401_with_www_authenticate(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "s3cret"
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/list"))
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "Bearer" in rest_error(response)["message"]


def test_a_wrong_token_is_401_with_www_authenticate(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "s3cret"
    for header in ("Bearer wrong", "Bearer s3cret-and-more", "Basic s3cret", "s3cret"):
        response = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/list"), headers={"Authorization": header})
        assert response.status_code == 401, header
        # The realm, the error and where the protected-resource metadata is (MCP authorization, RFC 9728).
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="hyperguild-brain", error="'), challenge
        assert (
            'resource_metadata="http://127.0.0.1:' in challenge
            and "/.well-known/oauth-protected-resource/mcp/brain" in challenge
        )


def test_the_right_token_opens_only_its_own_endpoint(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "brain-token"
    settings.SUPERVISOR_MCP_TOKEN = "supervisor-token"
    ok = mcp_post(f"{asgi_server}/mcp/brain", rpc("ping"), headers={"Authorization": "Bearer brain-token"})
    assert ok.status_code == 200
    crossed = mcp_post(f"{asgi_server}/mcp/supervisor", rpc("ping"), headers={"Authorization": "Bearer brain-token"})
    assert crossed.status_code == 401


def test_a_foreign_origin_is_403(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("ping"), headers={"Origin": "https://evil.example.com"})
    assert response.status_code == 403
    assert "HYPERGUILD_ALLOWED_ORIGINS" in rest_error(response)["message"]


def test_a_localhost_origin_on_any_port_is_allowed(asgi_server):
    for origin in ("http://localhost:3000", "http://127.0.0.1:51234", "http://[::1]:8000"):
        response = mcp_post(f"{asgi_server}/mcp/brain", rpc("ping"), headers={"Origin": origin})
        assert response.status_code == 200, origin


def test_a_foreign_host_header_is_refused(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("ping"), headers={"Host": "evil.example.com"})
    assert 400 <= response.status_code < 500


def test_an_oversized_body_is_413(asgi_server, settings):
    settings.HYPERGUILD_MCP_MAX_BODY = 2048
    big = rpc("tools/call", {"name": "brain_query", "arguments": {"query": "x" * 5000}})
    response = mcp_post(f"{asgi_server}/mcp/brain", big)
    assert response.status_code == 413
    assert "HYPERGUILD_MCP_MAX_BODY" in response.json()["error"]["message"]


def test_oauth_discovery_paths_answer_metadata_and_unknown_resources_json_404(asgi_server):
    # They answered 404 before people had their own sign-in (issue: Claude Code's OAuth discovery failed).
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp/brain",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp/supervisor",
    ):
        response = httpx.get(f"{asgi_server}{path}")
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("application/json")
    for path in ("/.well-known/oauth-protected-resource/mcp/nothing", "/mcp/brain/.well-known/oauth-foo"):
        response = httpx.get(f"{asgi_server}{path}")
        assert response.status_code == 404, path
        assert response.headers["content-type"].startswith("application/json")


def test_tools_list_describes_every_tool_and_pages_with_a_cursor(asgi_server, selftest_endpoint, settings):
    _, _, url = selftest_endpoint
    settings.HYPERGUILD_MCP_PAGE_SIZE = 2
    names, cursor = [], None
    for _ in range(10):
        params = {"cursor": cursor} if cursor else {}
        result = mcp_post(url, rpc("tools/list", params)).json()["result"]
        for tool in result["tools"]:
            assert tool["inputSchema"]["type"] == "object"
            assert tool["outputSchema"]["type"] == "object"
            assert set(tool["annotations"]) >= {"readOnlyHint", "destructiveHint", "idempotentHint"}
            names.append(tool["name"])
        cursor = result.get("nextCursor")
        if not cursor:
            break
    assert names == ["echo", "progress", "fail", "wait_for_cancel", "huge"]


def test_a_bad_cursor_is_invalid_params(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/list", {"cursor": "not-a-cursor"}))
    assert response.json()["error"]["code"] == -32602


def test_an_unknown_tool_is_invalid_params(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/call", {"name": "no_such_tool", "arguments": {}}))
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == -32602
    assert "no_such_tool" in error["message"]


def test_a_tool_result_has_structured_content_and_the_same_json_as_text(asgi_server, selftest_endpoint):
    _, _, url = selftest_endpoint
    result = call_tool(url, "echo", {"text": "héllo", "count": 3})
    assert result["isError"] is False
    assert result["structuredContent"] == {"text": "héllo", "count": 3}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({}, "'text' is required"),
        ({"text": "x", "count": 0}, "'count'"),
        ({"text": "x", "count": 51}, "'count'"),
        ({"text": 5}, "'text'"),
        ({"text": "x", "colour": "red"}, "colour"),
    ],
)
def test_arguments_that_break_the_schema_are_an_error_result_naming_the_field(
    asgi_server, selftest_endpoint, arguments, named
):
    _, _, url = selftest_endpoint
    result = call_tool(url, "echo", arguments)
    assert result["isError"] is True
    assert named in result["content"][0]["text"]
    assert "structuredContent" not in result


def test_a_failing_tool_is_an_error_result_not_a_protocol_error(asgi_server, selftest_endpoint):
    _, _, url = selftest_endpoint
    result = call_tool(url, "fail", {})
    assert result == {"content": [{"type": "text", "text": "the fail tool failed, as it always does"}], "isError": True}


def test_a_huge_result_is_cut_below_the_output_budget(asgi_server, selftest_endpoint, settings):
    _, _, url = selftest_endpoint
    result = call_tool(url, "huge", {})
    assert result["isError"] is False
    assert len(result["structuredContent"]["blob"]) < settings.HYPERGUILD_MCP_MAX_OUTPUT_CHARS
    assert result["structuredContent"]["blob"].endswith("[truncated]")
    assert result["_meta"] == {"hyperguild/truncated": True}


def test_a_call_with_a_progress_token_streams_progress_then_the_result(asgi_server, selftest_endpoint):
    _, _, url = selftest_endpoint
    message = rpc("tools/call", {"name": "progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok-1"}})
    response = mcp_post(url, message)
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = parse_sse(response.text)
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert [m["params"]["progress"] for m in progress] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "tok-1" and m["params"]["total"] == 3 for m in progress)
    assert messages[-1]["id"] == 1 and messages[-1]["result"]["structuredContent"] == {"done": 3}


def test_a_client_that_accepts_only_sse_gets_sse(asgi_server):
    response = httpx.post(
        f"{asgi_server}/mcp/brain",
        content=json.dumps(rpc("ping")),
        headers={"Accept": "text/event-stream", "Content-Type": "application/json"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert parse_sse(response.text) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


def test_notifications_cancelled_stops_the_running_call(asgi_server, selftest_endpoint):
    _, state, url = selftest_endpoint
    outcome: dict = {}

    def call() -> None:
        message = rpc("tools/call", {"name": "wait_for_cancel", "arguments": {}, "_meta": {"progressToken": 9}}, 42)
        outcome["response"] = mcp_post(url, message)

    caller = threading.Thread(target=call)
    caller.start()
    assert state.started.wait(10)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42, "reason": "user"}}
    started = time.monotonic()
    assert mcp_post(url, cancel).status_code == 202
    caller.join(10)
    assert state.cancel_seen.is_set()
    assert time.monotonic() - started < 5
    final = parse_sse(outcome["response"].text)[-1]
    assert final["result"]["isError"] is True
    assert "cancelled" in final["result"]["content"][0]["text"]


def test_a_client_that_goes_away_cancels_its_call(asgi_server, selftest_endpoint):
    _, state, url = selftest_endpoint
    message = rpc("tools/call", {"name": "wait_for_cancel", "arguments": {}, "_meta": {"progressToken": 1}}, 43)
    with httpx.Client(timeout=10) as client:
        with client.stream("POST", url, content=json.dumps(message), headers=MCP_HEADERS) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            assert state.started.wait(10)
    assert state.cancel_seen.wait(10)


def test_every_call_writes_one_structured_log_line(asgi_server, selftest_endpoint, caplog):
    _, _, url = selftest_endpoint
    with caplog.at_level("INFO", logger="hyperguild.mcp"):
        call_tool(url, "echo", {"text": "logged"})
    lines = [json.loads(r.getMessage()[4:]) for r in caplog.records if r.name == "hyperguild.mcp"]
    assert len(lines) == 1
    assert lines[0]["endpoint"] == "selftest" and lines[0]["method"] == "tools/call" and lines[0]["tool"] == "echo"
    assert lines[0]["status"] == "ok" and lines[0]["http"] == 200 and lines[0]["duration_ms"] >= 0
