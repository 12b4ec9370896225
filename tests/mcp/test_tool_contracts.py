"""The MCP surface is a contract: each endpoint's tool names and input schemas are pinned.

The expected surface lives in `fixtures/tool_contracts.json`, not in code, so
renaming a tool, dropping an argument or changing what is required shows up
here as a diff to that file: a decision someone makes, not an accident.
To change the surface on purpose, edit the fixture in the same commit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import ConfigDict, Field, model_validator

from hyperguild.mcp.contracts import NoArguments, ToolInput, ToolResult, input_schema
from hyperguild.mcp.registry import (
    Endpoint,
    Tool,
    ToolContext,
    ToolContractError,
    ToolError,
    all_endpoints,
    find_endpoint,
)
from ledger.usage import UsageReport
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


# -- typed contracts (issue 40): every tool declares an input model and a result model ------------------


class PingInput(ToolInput):
    word: str = Field(min_length=1, max_length=20, description="what to send back")
    times: int = Field(1, ge=1, le=3)
    hall: str | None = Field(None, max_length=10)


class PingResult(ToolResult):
    echo: str
    note: str | None  # always there, may be null
    hint: str | None = None  # left out when None


def _ping(arguments: PingInput, ctx: ToolContext) -> PingResult:
    return PingResult(echo=arguments.word * arguments.times, note=arguments.hall, hint=None)


def _register(**spec: Any) -> None:
    Endpoint("contracts-check", title="contract checks").add(Tool(handler=_ping, **spec))


def test_a_tool_registered_without_input_and_result_models_is_refused():
    dict_schema = {"type": "object", "properties": {}}
    with pytest.raises(ToolContractError, match="registered without its typed contract: declare input_model="):
        _register(name="ping", title="Ping", description="d")
    with pytest.raises(TypeError, match="unexpected keyword argument 'input_schema'"):
        _register(name="ping", title="Ping", description="d", input_schema=dict_schema, output_schema=dict_schema)
    with pytest.raises(ToolContractError, match="result_model must be a pydantic model class"):
        _register(name="ping", title="Ping", description="d", input_model=PingInput)
    with pytest.raises(ToolContractError, match="input_model must be a pydantic model class"):
        _register(name="ping", title="Ping", description="d", input_model=dict, result_model=PingResult)
    endpoint = Endpoint("contracts-check", title="contract checks")
    with pytest.raises(TypeError, match="unexpected keyword argument 'input_schema'"):
        endpoint.tool(
            name="ping",
            title="Ping",
            description="d",
            input_schema=dict_schema,  # type: ignore[call-arg]  # the refused spelling
            output_schema=dict_schema,
        )(lambda arguments, ctx: {})
    assert endpoint.tools == {}


def test_a_tool_that_reports_usage_needs_the_usage_fields_in_its_result_model():
    with pytest.raises(ToolContractError, match="must subclass ledger.usage.UsageReport"):
        _register(
            name="ping",
            title="Ping",
            description="d",
            input_model=PingInput,
            result_model=PingResult,
            reports_usage=True,
        )

    class PingUsage(PingResult, UsageReport):
        pass

    tool = Tool(
        name="ping",
        title="Ping",
        description="d",
        handler=_ping,
        input_model=PingInput,
        result_model=PingUsage,
        reports_usage=True,
    )
    assert {"usage", "budget_warning"} <= set(tool.output_schema["properties"])
    assert tool.output_schema["properties"]["usage"]["required"] == [
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "model",
        "calls",
    ]


def test_the_schemas_are_generated_from_the_models():
    tool = Tool(
        name="ping", title="Ping", description="d", handler=_ping, input_model=PingInput, result_model=PingResult
    )
    assert tool.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "word": {"type": "string", "minLength": 1, "maxLength": 20, "description": "what to send back"},
            "times": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1},
            "hall": {"type": "string", "maxLength": 10},
        },
        "required": ["word"],
    }
    assert tool.output_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"echo": {"type": "string"}, "note": {"type": ["string", "null"]}, "hint": {"type": "string"}},
        "required": ["echo", "note"],
    }


class OpenInput(ToolInput):
    model_config = ConfigDict(extra="allow", frozen=True, json_schema_extra={"required": []})
    label: str = ""


def test_an_open_input_writes_no_additional_properties_and_a_model_may_pin_an_empty_required():
    assert input_schema(OpenInput) == {
        "type": "object",
        "properties": {"label": {"type": "string", "default": ""}},
        "required": [],
    }
    assert input_schema(NoArguments) == {"type": "object", "additionalProperties": False, "properties": {}}


def test_a_call_parses_the_arguments_into_the_model_and_dumps_the_result_model():
    tool = Tool(
        name="ping", title="Ping", description="d", handler=_ping, input_model=PingInput, result_model=PingResult
    )
    ctx = ToolContext(endpoint="contracts-check")
    assert tool.call({"word": "ab", "times": 2}, ctx).model_dump(mode="json") == {"echo": "abab", "note": None}
    assert tool.call({"word": "ab", "hall": "h"}, ctx).model_dump(mode="json") == {"echo": "ab", "note": "h"}


class RangeInput(ToolInput):
    low: int
    high: int

    @model_validator(mode="after")
    def _ordered(self) -> RangeInput:
        if self.low > self.high:
            raise ValueError("low must not be above high")
        return self


def test_a_rule_of_the_input_model_beyond_its_schema_is_a_tool_error_in_words():
    tool = Tool(
        name="span",
        title="Span",
        description="d",
        input_model=RangeInput,
        result_model=PingResult,
        handler=lambda arguments, ctx: PingResult(echo="never", note=None),
    )
    with pytest.raises(ToolError, match="Invalid arguments for span: Value error, low must not be above high"):
        tool.call({"low": 3, "high": 1}, ToolContext(endpoint="contracts-check"))


def test_a_handler_that_returns_something_else_than_its_result_model_fails_loudly():
    tool = Tool(
        name="ping",
        title="Ping",
        description="d",
        handler=lambda arguments, ctx: {"echo": "x"},
        input_model=PingInput,
        result_model=PingResult,
    )
    with pytest.raises(ToolContractError, match="returned dict, not its result_model PingResult"):
        tool.call({"word": "ab"}, ToolContext(endpoint="contracts-check"))


def test_every_registered_tool_declares_its_input_and_result_models():
    tools = [tool for endpoint in all_endpoints() for tool in endpoint.tools.values()]
    assert len(tools) > 20
    assert [tool.name for tool in tools if not (tool.input_model and tool.result_model)] == []


def test_every_registered_tool_schema_is_valid_json_schema():
    """The registry generates the schemas at import without the (slow) metaschema check: it is made here."""
    checked = []
    for endpoint in all_endpoints():
        for tool in endpoint.tools.values():
            for label, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema)):
                assert schema.get("type") == "object", f"{endpoint.name}/{tool.name}: {label} is not an object"
                Draft202012Validator.check_schema(schema)
                checked.append((endpoint.name, tool.name, label))
    assert {("brain", "brain_recent", "outputSchema"), ("supervisor", "review", "inputSchema")} <= set(checked)


def test_a_schema_that_is_not_json_schema_fails_the_metaschema_check():
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "object", "properties": {"x": {"type": "strng"}}})
