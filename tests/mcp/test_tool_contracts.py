"""The MCP surface is a contract: each endpoint's tool names and input schemas are pinned.

The expected surface lives in `fixtures/tool_contracts.json`, not in code, so
renaming a tool, dropping an argument or changing what is required shows up
here as a diff to that file: a decision someone makes, not an accident.
To change the surface on purpose, edit the fixture in the same commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyperguild.mcp.registry import find_endpoint
from tests.conftest import mcp_post, rpc

FIXTURE = Path(__file__).parent / "fixtures" / "tool_contracts.json"
CONTRACTS: dict[str, dict[str, dict]] = json.loads(FIXTURE.read_text())


def test_the_fixture_names_the_three_product_endpoints():
    assert sorted(CONTRACTS) == ["brain", "routing", "supervisor"]


@pytest.mark.parametrize("endpoint_name", sorted(CONTRACTS))
def test_each_endpoint_registers_exactly_the_pinned_tools(endpoint_name):
    endpoint = find_endpoint(endpoint_name)
    assert endpoint is not None, f"no app registers the {endpoint_name} endpoint"
    assert sorted(endpoint.tools) == sorted(CONTRACTS[endpoint_name])


@pytest.mark.parametrize(
    "endpoint_name,tool_name", [(endpoint, tool) for endpoint in sorted(CONTRACTS) for tool in CONTRACTS[endpoint]]
)
def test_each_tool_keeps_its_pinned_input_schema(endpoint_name, tool_name):
    tool = find_endpoint(endpoint_name).tools[tool_name]
    assert tool.input_schema == CONTRACTS[endpoint_name][tool_name]


def _listed_tools(url: str) -> dict[str, dict]:
    tools, cursor = {}, None
    for _ in range(20):
        result = mcp_post(url, rpc("tools/list", {"cursor": cursor} if cursor else {})).json()["result"]
        tools.update({tool["name"]: tool["inputSchema"] for tool in result["tools"]})
        cursor = result.get("nextCursor")
        if not cursor:
            return tools
    raise AssertionError("tools/list did not end after 20 pages")


@pytest.mark.parametrize("endpoint_name", sorted(CONTRACTS))
def test_tools_list_over_http_shows_the_pinned_surface(asgi_server, endpoint_name):
    assert _listed_tools(f"{asgi_server}/mcp/{endpoint_name}") == CONTRACTS[endpoint_name]
