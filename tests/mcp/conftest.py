"""A throw-away endpoint, /mcp/selftest, with tools that exercise the engine.

The engine knows nothing about notes or skills, so its behaviour is tested
on tools made for the purpose: one that reports progress, one that fails,
one that waits to be cancelled, one with a bounded argument.
"""

from __future__ import annotations

import threading
import time

import pytest

from hyperguild.mcp.registry import Endpoint, ToolContext, ToolError, register_endpoint, unregister_endpoint

OBJECT = {"type": "object", "additionalProperties": False}


class SelfTestState:
    def __init__(self) -> None:
        self.cancel_seen = threading.Event()
        self.started = threading.Event()


@pytest.fixture
def selftest_endpoint(asgi_server):
    state = SelfTestState()
    endpoint = Endpoint("selftest", title="engine self-test", token_setting="BRAIN_MCP_TOKEN")

    @endpoint.tool(
        name="echo",
        title="Echo",
        description="Returns its text and a bounded count.",
        input_schema={
            **OBJECT,
            "properties": {
                "text": {"type": "string", "minLength": 1},
                "count": {"type": "integer", "minimum": 1, "maximum": 50, "default": 1},
            },
            "required": ["text"],
        },
        output_schema={**OBJECT, "properties": {"text": {"type": "string"}, "count": {"type": "integer"}}, "required": ["text"]},
        read_only=True,
        idempotent=True,
    )
    def echo(arguments: dict, ctx: ToolContext) -> dict:
        return {"text": arguments["text"], "count": arguments.get("count", 1)}

    @endpoint.tool(
        name="progress",
        title="Counts with progress",
        description="Reports progress `steps` times, then returns.",
        input_schema={**OBJECT, "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 20}}, "required": ["steps"]},
        output_schema={**OBJECT, "properties": {"done": {"type": "integer"}}, "required": ["done"]},
        read_only=True,
        long_running=True,
    )
    def progress(arguments: dict, ctx: ToolContext) -> dict:
        steps = arguments["steps"]
        for step in range(1, steps + 1):
            ctx.report_progress(step, steps, f"step {step} of {steps}")
            time.sleep(0.05)
        return {"done": steps}

    @endpoint.tool(
        name="fail",
        title="Always fails",
        description="Raises a ToolError.",
        input_schema={**OBJECT, "properties": {}},
        output_schema={**OBJECT, "properties": {}},
        read_only=True,
    )
    def fail(arguments: dict, ctx: ToolContext) -> dict:
        raise ToolError("the fail tool failed, as it always does")

    @endpoint.tool(
        name="wait_for_cancel",
        title="Waits until cancelled",
        description="Blocks until the client cancels (at most 20 s).",
        input_schema={**OBJECT, "properties": {}},
        output_schema={**OBJECT, "properties": {"cancelled": {"type": "boolean"}}, "required": ["cancelled"]},
        read_only=True,
        long_running=True,
    )
    def wait_for_cancel(arguments: dict, ctx: ToolContext) -> dict:
        state.started.set()
        ctx.report_progress(0, None, "waiting")
        if ctx.cancelled.wait(timeout=20):
            state.cancel_seen.set()
            ctx.check_cancelled()
        return {"cancelled": False}

    @endpoint.tool(
        name="huge",
        title="Returns a huge result",
        description="Returns more text than Claude Code accepts.",
        input_schema={**OBJECT, "properties": {}},
        output_schema={**OBJECT, "properties": {"blob": {"type": "string"}}, "required": ["blob"]},
        read_only=True,
    )
    def huge(arguments: dict, ctx: ToolContext) -> dict:
        return {"blob": "x" * 500_000}

    register_endpoint(endpoint)
    yield endpoint, state, f"{asgi_server}/mcp/selftest"
    unregister_endpoint("selftest")
