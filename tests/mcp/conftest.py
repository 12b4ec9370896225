"""A throw-away endpoint, /mcp/selftest, with tools that exercise the engine.

The engine knows nothing about notes or skills, so its behaviour is tested
on tools made for the purpose: one that reports progress, one that fails,
one that waits to be cancelled, one with a bounded argument.
"""

from __future__ import annotations

import threading
import time

import pytest
from pydantic import Field

from hyperguild.mcp.contracts import NoArguments, ToolInput, ToolResult
from hyperguild.mcp.registry import Endpoint, ToolContext, ToolError, register_endpoint, unregister_endpoint
from supervisor.actions import do_request_cancel
from supervisor.jobs import SkillRunJobs
from supervisor.models import SkillRun


class SelfTestState:
    def __init__(self) -> None:
        self.cancel_seen = threading.Event()
        self.started = threading.Event()


class EchoInput(ToolInput):
    text: str = Field(min_length=1)
    count: int = Field(1, ge=1, le=50)


class EchoResult(ToolResult):
    text: str
    count: int


class StepsInput(ToolInput):
    steps: int = Field(ge=1, le=20)


class DoneResult(ToolResult):
    done: int


class CancelledResult(ToolResult):
    cancelled: bool


class BlobResult(ToolResult):
    blob: str


@pytest.fixture
def selftest_endpoint(asgi_server, skill_worker):
    state = SelfTestState()
    endpoint = Endpoint("selftest", title="engine self-test", token_setting="BRAIN_MCP_TOKEN")
    # Its long tools started as MCP tasks run as jobs, as the service's do: a SkillRun each, run by the worker
    # (`skill_worker`, a thread of this process, so the handlers below run here and share `state`).
    endpoint.jobs = SkillRunJobs("selftest")

    @endpoint.tool(
        name="echo",
        title="Echo",
        description="Returns its text and a bounded count.",
        input_model=EchoInput,
        result_model=EchoResult,
        read_only=True,
        idempotent=True,
    )
    def echo(arguments: EchoInput, ctx: ToolContext) -> EchoResult:
        return EchoResult(text=arguments.text, count=arguments.count)

    @endpoint.tool(
        name="progress",
        title="Counts with progress",
        description="Reports progress `steps` times, then returns.",
        input_model=StepsInput,
        result_model=DoneResult,
        read_only=True,
        long_running=True,
    )
    def progress(arguments: StepsInput, ctx: ToolContext) -> DoneResult:
        steps = arguments.steps
        for step in range(1, steps + 1):
            ctx.report_progress(step, steps, f"step {step} of {steps}")
            time.sleep(0.05)
        return DoneResult(done=steps)

    @endpoint.tool(
        name="fail",
        title="Always fails",
        description="Raises a ToolError.",
        input_model=NoArguments,
        result_model=ToolResult,
        read_only=True,
    )
    def fail(arguments: NoArguments, ctx: ToolContext) -> ToolResult:
        raise ToolError("the fail tool failed, as it always does")

    @endpoint.tool(
        name="wait_for_cancel",
        title="Waits until cancelled",
        description="Blocks until the client cancels (at most 20 s).",
        input_model=NoArguments,
        result_model=CancelledResult,
        read_only=True,
        long_running=True,
    )
    def wait_for_cancel(arguments: NoArguments, ctx: ToolContext) -> CancelledResult:
        state.started.set()
        ctx.report_progress(0, None, "waiting")
        if ctx.cancelled.wait(timeout=20):
            state.cancel_seen.set()
            ctx.check_cancelled()
        return CancelledResult(cancelled=False)

    @endpoint.tool(
        name="huge",
        title="Returns a huge result",
        description="Returns more text than Claude Code accepts.",
        input_model=NoArguments,
        result_model=BlobResult,
        read_only=True,
    )
    def huge(arguments: NoArguments, ctx: ToolContext) -> BlobResult:
        return BlobResult(blob="x" * 500_000)

    register_endpoint(endpoint)
    yield endpoint, state, f"{asgi_server}/mcp/selftest"
    stop_unfinished_runs()  # a task a test left working (wait_for_cancel) ends before the worker stops
    unregister_endpoint("selftest")


def stop_unfinished_runs() -> None:
    """Cancel every run still queued or working, and wait (a little) for them to end."""
    for run_id in SkillRun.objects.filter(status__in=SkillRun.UNFINISHED).values_list("pk", flat=True):
        do_request_cancel(run_id)
    deadline = time.monotonic() + 10
    while SkillRun.objects.filter(status__in=SkillRun.UNFINISHED).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
