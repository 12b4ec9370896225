"""Domain errors reach MCP callers only where an app's tools.py declared them (Endpoint.translate_errors)."""

from __future__ import annotations

import pytest

from hyperguild.errors import DomainError
from hyperguild.mcp.contracts import NoArguments, ToolResult
from hyperguild.mcp.registry import Endpoint, ToolContext, ToolError, register_endpoint, unregister_endpoint
from tests.conftest import call_tool


class ShelfError(DomainError):
    """A domain error of a made-up app."""


class BookMissing(ShelfError):
    pass


class OtherError(DomainError):
    pass


@pytest.fixture
def shelf_url(asgi_server, settings):
    settings.BRAIN_MCP_TOKEN = ""
    endpoint = Endpoint("shelf", title="domain errors", token_setting="BRAIN_MCP_TOKEN")
    endpoint.translate_errors(ShelfError)

    @endpoint.tool(
        name="declared",
        title="Declared",
        description="Raises a declared domain error.",
        input_model=NoArguments,
        result_model=ToolResult,
        read_only=True,
    )
    def declared(arguments: NoArguments, ctx: ToolContext) -> ToolResult:
        raise BookMissing("no book 'dune' on this shelf; list the shelf first", data={"shelf": 3})

    @endpoint.tool(
        name="undeclared",
        title="Undeclared",
        description="Raises a domain error nobody declared.",
        input_model=NoArguments,
        result_model=ToolResult,
        read_only=True,
    )
    def undeclared(arguments: NoArguments, ctx: ToolContext) -> ToolResult:
        raise OtherError("this one was not declared")

    register_endpoint(endpoint)
    yield f"{asgi_server}/mcp/shelf"
    unregister_endpoint("shelf")


def test_a_declared_domain_error_is_a_tool_error_with_its_message_and_data(shelf_url):
    result = call_tool(shelf_url, "declared", {})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "no book 'dune' on this shelf; list the shelf first\n{\"shelf\": 3}"


def test_an_undeclared_domain_error_is_an_unexpected_failure(shelf_url):
    result = call_tool(shelf_url, "undeclared", {})
    assert result["isError"] is True
    assert "failed unexpectedly (OtherError" in result["content"][0]["text"]


def test_domain_errors_are_not_mcp_errors():
    from brain.errors import BrainError
    from sessions.errors import SessionsError
    from supervisor.roots import RootRefused
    from supervisor.routing import RoutingFailed

    for error in (RootRefused, RoutingFailed, BrainError, SessionsError):
        assert issubclass(error, DomainError) and not issubclass(error, ToolError), error
