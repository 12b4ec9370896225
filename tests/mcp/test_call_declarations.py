"""The engine learns a call's session and project from what the tool declares (issue 49), not by reading
arguments named `session_id` and `project_root`: the input model marks them (`contracts.CallSession`,
`contracts.CallProject`), and the model calls the tool makes are recorded under them."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from hyperguild.mcp.contracts import CallProject, CallSession, ToolInput, ToolResult, declared_field
from hyperguild.mcp.registry import Tool, all_endpoints


def every_tool() -> list[Tool]:
    return [tool for endpoint in all_endpoints() for tool in endpoint.tools.values()]


def test_every_tool_with_a_session_or_project_argument_declares_it():
    # What the engine read by name before is now declared: no tool lost the session its calls are recorded under.
    tools = every_tool()
    assert tools
    for tool in tools:
        fields = tool.models[0].model_fields
        assert tool.session_field == ("session_id" if "session_id" in fields else ""), tool.name
        assert tool.project_field == ("project_root" if "project_root" in fields else ""), tool.name
    assert any(tool.session_field for tool in tools) and any(tool.project_field for tool in tools)


class Conversation(ToolInput):
    conversation: Annotated[str, CallSession()] = Field(max_length=200)
    workspace: Annotated[str | None, CallProject()] = None
    session_id: str = ""  # a field by that name that is not the call's session


class Done(ToolResult):
    ok: bool


def test_the_declared_argument_counts_whatever_its_name_and_a_mere_name_does_not():
    tool = Tool(
        name="fixture_conversation",
        title="",
        description="",
        handler=lambda arguments, ctx: Done(ok=True),
        input_model=Conversation,
        result_model=Done,
    )
    assert (tool.session_field, tool.project_field) == ("conversation", "workspace")


def test_two_arguments_marked_as_the_session_are_refused():
    class Twice(ToolInput):
        one: Annotated[str, CallSession()] = ""
        two: Annotated[str, CallSession()] = ""

    with pytest.raises(TypeError, match="marks 2 arguments as its CallSession"):
        declared_field(Twice, CallSession)
