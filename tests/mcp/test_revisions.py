"""Both MCP revisions on the same endpoints, chosen per request (hyperguild.mcp.revision).

Raw HTTP, so that every status code and error code the 2026-07-28 transport
prescribes is checked as sent; the official client and the conformance suite
exercise the same paths in test_official_client.py and test_conformance.py.
"""

from __future__ import annotations

import base64
import json
import logging

import httpx
import pytest

from tests.conftest import mcp_post, parse_sse, rpc

pytestmark = pytest.mark.django_db(transaction=True)

MODERN = "2026-07-28"
CLIENT_INFO = {"name": "raw-test", "version": "1.0"}


def envelope(capabilities: dict | None = None, version: str = MODERN) -> dict:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


def modern_headers(method: str, name: str | None = None, version: str = MODERN) -> dict:
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def modern_post(
    url: str,
    method: str,
    params: dict | None = None,
    *,
    name: str | None = None,
    headers: dict | None = None,
    version: str = MODERN,
):
    body = {**(params or {}), "_meta": envelope(version=version)}
    return mcp_post(url, rpc(method, body), {**modern_headers(method, name, version), **(headers or {})})


def test_server_discover_names_both_revisions_and_needs_no_handshake(asgi_server):
    response = modern_post(f"{asgi_server}/mcp/brain", "server/discover")
    assert response.status_code == 200, response.text
    assert "mcp-session-id" not in response.headers
    result = response.json()["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"][:2] == ["2026-07-28", "2025-11-25"]
    assert "tools" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "hyperguild-brain"
    assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")


def test_a_modern_request_without_meta_is_400_invalid_params(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/list", {}), modern_headers("tools/list"))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602
    assert response.json()["id"] == 1


def test_a_modern_request_missing_client_capabilities_is_400_invalid_params(asgi_server):
    meta = envelope()
    del meta["io.modelcontextprotocol/clientCapabilities"]
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("tools/list", {"_meta": meta}), modern_headers("tools/list"))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602
    assert "clientCapabilities" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Mcp-Method": "tools/call"},  # says another method than the body
        {"MCP-Protocol-Version": "2025-11-25"},  # says another version than _meta
    ],
)
def test_headers_that_disagree_with_the_body_are_400_header_mismatch(asgi_server, headers):
    response = modern_post(f"{asgi_server}/mcp/brain", "tools/list", headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32020


def test_a_missing_mcp_method_header_is_a_header_mismatch(asgi_server):
    body = rpc("tools/list", {"_meta": envelope()})
    response = mcp_post(f"{asgi_server}/mcp/brain", body, {"MCP-Protocol-Version": MODERN})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_mcp_name_must_match_the_tool_called_and_may_be_base64(selftest_endpoint):
    _, _, url = selftest_endpoint
    params = {"name": "echo", "arguments": {"text": "hi"}}
    wrong = modern_post(url, "tools/call", params, name="fail")
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == -32020
    missing = modern_post(url, "tools/call", params)
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32020
    encoded = "=?base64?" + base64.b64encode(b"echo").decode() + "?="
    right = modern_post(url, "tools/call", params, name=encoded)
    assert right.status_code == 200, right.text
    result = right.json()["result"]
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"text": "hi", "count": 1}
    assert "ttlMs" not in result  # a tool result is not cacheable


def test_an_unknown_version_is_400_unsupported_with_the_supported_list(asgi_server):
    response = modern_post(f"{asgi_server}/mcp/brain", "tools/list", version="2099-01-01")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022
    assert error["data"]["requested"] == "2099-01-01"
    assert "2026-07-28" in error["data"]["supported"] and "2025-11-25" in error["data"]["supported"]


def test_an_unknown_version_header_alone_is_unsupported_too(asgi_server):
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc("ping"), headers={"MCP-Protocol-Version": "1999-01-01"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32022
    assert response.json()["error"]["data"]["requested"] == "1999-01-01"


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"])
def test_removed_and_unknown_methods_are_404_method_not_found(asgi_server, method):
    response = modern_post(f"{asgi_server}/mcp/brain", method)
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == -32601


def test_lists_carry_true_caching_hints(asgi_server, settings):
    url = f"{asgi_server}/mcp/brain"
    tools = modern_post(url, "tools/list").json()["result"]
    assert tools["resultType"] == "complete"
    assert [tool["name"] for tool in tools["tools"]][:1] == ["brain_query"]
    assert (tools["ttlMs"], tools["cacheScope"]) == (60_000, "public")
    notes = modern_post(url, "resources/list").json()["result"]
    assert (notes["ttlMs"], notes["cacheScope"]) == (0, "private")  # notes change with every write
    settings.BRAIN_MCP_TOKEN = "team-token"
    behind_token = modern_post(url, "tools/list", headers={"Authorization": "Bearer team-token"}).json()["result"]
    assert behind_token["cacheScope"] == "private"


def test_a_missing_resource_is_invalid_params_in_2026_and_32002_before(asgi_server):
    url = f"{asgi_server}/mcp/brain"
    uri = "brain://note/no-such-note"
    modern = modern_post(url, "resources/read", {"uri": uri}, name=uri)
    assert modern.status_code == 400, modern.text
    assert modern.json()["error"]["code"] == -32602
    legacy = mcp_post(url, rpc("resources/read", {"uri": uri}))
    assert legacy.status_code == 200
    assert legacy.json()["error"]["code"] == -32002


def test_the_handshake_era_is_unchanged(asgi_server):
    url = f"{asgi_server}/mcp/brain"
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT_INFO}
    response = mcp_post(url, rpc("initialize", init))
    assert response.json()["result"]["protocolVersion"] == "2025-06-18"
    assert "resultType" not in response.json()["result"]
    assert response.headers["mcp-session-id"]
    listed = mcp_post(url, rpc("tools/list"), {"MCP-Protocol-Version": "2025-06-18"}).json()["result"]
    assert "ttlMs" not in listed and "resultType" not in listed
    # The 2026 probe without the 2026 envelope: method not found, so old-style probes fall back.
    assert mcp_post(url, rpc("server/discover", {})).json()["error"]["code"] == -32601


def test_every_log_line_names_the_revision(asgi_server, caplog):
    url = f"{asgi_server}/mcp/brain"
    with caplog.at_level(logging.INFO, logger="hyperguild.mcp"):
        modern_post(url, "tools/list")
        mcp_post(url, rpc("tools/list"), {"MCP-Protocol-Version": "2025-11-25"})
        mcp_post(url, rpc("tools/list", {}), modern_headers("tools/list"))  # refused: no _meta
        mcp_post(url, b"{not json")
    lines = [json.loads(r.getMessage()[4:]) for r in caplog.records if r.getMessage().startswith("mcp {")]
    assert [line["revision"] for line in lines] == ["2026-07-28", "2025-11-25", "2026-07-28", "undeclared"]
    assert lines[2]["status"] == "rejected -32602"


def test_a_routing_header_sent_twice_is_a_header_mismatch(asgi_server):
    body = json.dumps(rpc("tools/list", {"_meta": envelope()})).encode()
    headers = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/list"),
        ("Mcp-Method", "tools/list"),
    ]
    response = httpx.post(f"{asgi_server}/mcp/brain", content=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_a_2026_call_with_a_progress_token_streams_progress_then_the_2026_result(selftest_endpoint):
    _, _, url = selftest_endpoint
    params = {"name": "progress", "arguments": {"steps": 2}, "_meta": {**envelope(), "progressToken": "p1"}}
    response = mcp_post(url, rpc("tools/call", params), modern_headers("tools/call", "progress"))
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = parse_sse(response.text)
    assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2]
    assert messages[-1]["result"]["resultType"] == "complete"
    assert messages[-1]["result"]["structuredContent"] == {"done": 2}


@pytest.mark.parametrize(
    "meta",
    [
        None,
        [],
        "2026-07-28",
        {"io.modelcontextprotocol/protocolVersion": 2026, "io.modelcontextprotocol/clientCapabilities": {}},
        {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": []},
        {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": 7},
        },
        {"io.modelcontextprotocol/protocolVersion": None, "io.modelcontextprotocol/clientCapabilities": None},
    ],
)
@pytest.mark.parametrize("method", ["tools/list", "tools/call", "tasks/get", "server/discover"])
def test_hostile_envelopes_get_a_json_rpc_error_or_a_result_never_a_500(asgi_server, meta, method):
    params = {"name": "brain_query", "taskId": "x", "_meta": meta}
    response = mcp_post(f"{asgi_server}/mcp/brain", rpc(method, params), modern_headers(method, "brain_query"))
    assert response.status_code < 500, response.text
    body = response.json()
    assert "error" in body or "result" in body
