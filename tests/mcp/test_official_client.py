"""The official `mcp` Python client (2.x) against the live server."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.django_db(transaction=True)


def run(scenario):
    return anyio.run(scenario)


def test_legacy_mode_initializes_lists_and_calls_a_tool(selftest_endpoint):
    _, _, url = selftest_endpoint

    async def scenario():
        async with Client(url, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info.name == "hyperguild-selftest"
            listed = await client.list_tools()
            result = await client.call_tool("echo", {"text": "hi", "count": 2})
            return [tool.name for tool in listed.tools], result

    names, result = run(scenario)
    assert "echo" in names and "progress" in names
    assert result.is_error is False
    assert result.structured_content == {"text": "hi", "count": 2}


def test_the_default_mode_probes_server_discover_and_stays_on_2026(selftest_endpoint):
    _, _, url = selftest_endpoint

    async def scenario():
        async with Client(url) as client:  # mode="auto": server/discover first, initialize only if that fails
            result = await client.call_tool("echo", {"text": "auto"})
            return client.protocol_version, result

    version, result = run(scenario)
    assert version == "2026-07-28"
    assert result.structured_content["text"] == "auto"


def test_the_2026_mode_lists_tools_and_calls_brain_query_with_the_bearer_token(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = "brain-token-2026"
    url = f"{asgi_server}/mcp/brain"

    async def scenario(token):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:
                listed = await client.list_tools()
                result = await client.call_tool("brain_query", {"query": "anything at all"})
                return client.protocol_version, [tool.name for tool in listed.tools], result

    version, names, result = run(lambda: scenario("brain-token-2026"))
    assert version == "2026-07-28"
    assert "brain_query" in names and "brain_write" in names
    assert result.is_error is False
    assert "hits" in result.structured_content
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces a 401 as its own error type
        run(lambda: scenario("wrong-token"))


def test_the_legacy_mode_still_reaches_brain_query(asgi_server):
    url = f"{asgi_server}/mcp/brain"

    async def scenario():
        async with Client(url, mode="legacy") as client:
            return client.protocol_version, await client.call_tool("brain_query", {"query": "anything"})

    version, result = run(scenario)
    assert version == "2025-11-25"
    assert result.is_error is False


def test_progress_notifications_reach_the_client(selftest_endpoint):
    _, _, url = selftest_endpoint
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def scenario():
        async with Client(url, mode="legacy") as client:
            return await client.call_tool("progress", {"steps": 4}, progress_callback=on_progress)

    result = run(scenario)
    assert result.structured_content == {"done": 4}
    assert [p for p, _, _ in seen] == [1, 2, 3, 4]
    assert seen[-1] == (4, 4, "step 4 of 4")


def test_a_failing_tool_arrives_as_is_error(selftest_endpoint):
    _, _, url = selftest_endpoint

    async def scenario():
        async with Client(url, mode="legacy") as client:
            return await client.call_tool("fail", {})

    result = run(scenario)
    assert result.is_error is True
    assert "always does" in result.content[0].text


def test_bad_arguments_arrive_as_is_error_naming_the_field(selftest_endpoint):
    _, _, url = selftest_endpoint

    async def scenario():
        async with Client(url, mode="legacy") as client:
            return await client.call_tool("echo", {"text": "x", "count": 99})

    result = run(scenario)
    assert result.is_error is True
    assert "'count'" in result.content[0].text


def test_an_unknown_tool_is_a_protocol_error(selftest_endpoint):
    _, _, url = selftest_endpoint

    async def scenario():
        async with Client(url, mode="legacy") as client:
            try:
                await client.call_tool("nope", {})
            except MCPError as error:
                return error
        return None

    error = run(scenario)
    assert isinstance(error, MCPError)
    assert error.code == -32602


def test_a_cancelled_call_stops_its_handler(selftest_endpoint):
    _, state, url = selftest_endpoint

    async def scenario():
        async with Client(url, mode="legacy") as client:
            with anyio.move_on_after(20) as outer:
                async with anyio.create_task_group() as group:

                    async def call():
                        await client.call_tool("wait_for_cancel", {}, progress_callback=_ignore)

                    group.start_soon(call)
                    await anyio.to_thread.run_sync(state.started.wait, 10)
                    group.cancel_scope.cancel()  # abandoning the request sends notifications/cancelled
            assert not outer.cancelled_caught
            await anyio.to_thread.run_sync(state.cancel_seen.wait, 10)

    run(scenario)
    assert state.cancel_seen.is_set()


async def _ignore(progress, total, message):
    return None


def test_the_client_authenticates_with_a_bearer_header(selftest_endpoint, settings):
    _, _, url = selftest_endpoint
    settings.BRAIN_MCP_TOKEN = "client-token"  # the selftest endpoint uses the brain token

    async def scenario(token):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                return await client.call_tool("echo", {"text": "authed"})

    assert run(lambda: scenario("client-token")).structured_content["text"] == "authed"
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces a 401 as its own error type
        run(lambda: scenario("wrong-token"))
