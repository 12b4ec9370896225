"""The real app admits HYPERGUILD_WEB_CONCURRENCY requests at a time (AdmissionMiddleware, whatever the server):
quick calls queue behind busy ones, but never behind a cancellation or a tool waiting outside."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from django.conf import settings

from hyperguild.mcp.contracts import NoArguments, ToolResult
from hyperguild.mcp.registry import ToolContext
from tests.conftest import call_tool, mcp_post, rpc

pytestmark = pytest.mark.django_db(transaction=True)


def in_background(target) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        outcome["response"] = target()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_quick_calls_wait_for_a_place_but_a_cancellation_goes_straight_in(selftest_endpoint):
    _, state, url = selftest_endpoint
    places = settings.HYPERGUILD_WEB_CONCURRENCY
    busy = []
    for number in range(places):  # every place taken by a call that waits to be cancelled
        state.started.clear()
        message = rpc("tools/call", {"name": "wait_for_cancel", "arguments": {}}, 100 + number)
        busy.append(in_background(lambda m=message: mcp_post(url, m, {"Mcp-Session-Id": "busy-client"})))
        assert state.started.wait(10)

    echo_thread, echo = in_background(lambda: call_tool(url, "echo", {"text": "queued"}))
    echo_thread.join(1.0)
    assert echo_thread.is_alive()  # no place free: it waits its turn

    started = time.monotonic()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 100, "reason": "esc"}}
    assert mcp_post(url, cancel, {"Mcp-Session-Id": "busy-client"}).status_code == 202
    assert time.monotonic() - started < 2  # the notification did not queue behind the calls it cancels

    busy[0][0].join(10)
    assert "cancelled" in busy[0][1]["response"].json()["result"]["content"][0]["text"]
    echo_thread.join(10)  # the cancelled call's place went to the echo
    assert echo["response"]["structuredContent"]["text"] == "queued"

    for number in range(1, places):
        cancel["params"]["requestId"] = 100 + number
        mcp_post(url, cancel, {"Mcp-Session-Id": "busy-client"})
    for thread, _ in busy:
        thread.join(10)


class Answered(ToolResult):
    answered: bool


def test_a_tool_that_waits_outside_the_service_holds_no_place(selftest_endpoint):
    endpoint, _, url = selftest_endpoint
    release, waiting = threading.Event(), threading.Semaphore(0)

    @endpoint.tool(
        name="ask_a_model",
        title="Waits on an outside model",
        description="Blocks until the test lets it go, as a skill worker or an LLM would.",
        input_model=NoArguments,
        result_model=Answered,
        read_only=True,
        open_world=True,
    )
    def ask_a_model(arguments: NoArguments, ctx: ToolContext) -> Answered:
        waiting.release()
        release.wait(20)
        return Answered(answered=True)

    slow = [
        in_background(lambda: call_tool(url, "ask_a_model", {})) for _ in range(settings.HYPERGUILD_WEB_CONCURRENCY + 2)
    ]
    try:
        for _ in slow:
            assert waiting.acquire(timeout=10)  # every one of them is running, more than there are places
        started = time.monotonic()
        assert call_tool(url, "echo", {"text": "not queued"})["structuredContent"]["text"] == "not queued"
        assert time.monotonic() - started < 2
    finally:
        release.set()
        for thread, _ in slow:
            thread.join(10)
    assert all(outcome["response"]["structuredContent"] == {"answered": True} for _, outcome in slow)


def test_mcp_answers_and_pages_go_through_the_one_middleware_chain(asgi_server):
    answer = mcp_post(f"{asgi_server}/mcp/brain", rpc("ping"))
    assert answer.status_code == 200
    assert answer.headers["content-length"] == str(len(answer.content))
    assert answer.headers["x-request-id"] and answer.headers["x-content-type-options"] == "nosniff"
    assert "set-cookie" not in answer.headers  # a bearer-token call starts no session

    page = httpx.get(f"{asgi_server}/admin/login/", timeout=10)
    assert page.status_code == 200
    assert "content-security-policy" in page.headers and page.headers["x-frame-options"] == "DENY"
    assert "csrftoken" in page.headers.get("set-cookie", "")
