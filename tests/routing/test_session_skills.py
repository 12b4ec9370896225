"""retrospective and trainer on /mcp/routing: the sessions logic, run with the routed model."""

from __future__ import annotations

import pytest

from sessions.actions import do_log_entry
from supervisor.models import RoutingEntry
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, FAST, THINKING, seed_history

pytestmark = pytest.mark.django_db(transaction=True)

LEARNINGS = {
    "learnings": [
        {
            "title": "Pin the embedded PostgreSQL port",
            "body": "Tests flaked until the port was pinned.",
            "kind": "correction",
            "evidence": [1, 2],
        }
    ]
}


def a_session(session_id: str) -> None:
    do_log_entry(session_id, kind="note", status="fail", message="tests flake: port in use")
    do_log_entry(session_id, kind="note", status="pass", message="pinned the port; tests pass")


def test_a_routed_retrospective_fails_open_when_the_fast_model_cites_entries_that_do_not_exist(gateway, asgi_server):
    seed_history("retrospective", 0.95)
    a_session("retro-1")
    gateway.on(FAST, lambda request: Reply.json({"learnings": [{**LEARNINGS["learnings"][0], "evidence": [99]}]}))
    gateway.on(THINKING, lambda request: Reply.json(LEARNINGS))

    result = call_tool(f"{asgi_server}/mcp/routing", "retrospective", {"session_id": "retro-1"}, headers=AUTH)

    assert result.get("isError") is not True, result
    content = result["structuredContent"]
    assert (content["status"], content["model_used"], content["count"]) == ("pass", THINKING, 1)
    assert content["learnings"][0]["title"] == "Pin the embedded PostgreSQL port"
    first, second = RoutingEntry.objects.filter(session_id="retro-1").order_by("id")
    assert (first.model, first.status, first.is_final) == (FAST, "fail", False)
    assert "do not exist" in first.error
    assert (second.reason, second.status, second.is_final) == ("fail-open retry", "pass", True)
    # Both models' calls are in its usage; the fake reported no token counts, so the cost is unknown, not 0.
    assert content["usage"] == {
        "input_tokens": None,
        "output_tokens": None,
        "cost_usd": None,
        "cost_reason": "usage unknown",
        "model": f"{FAST}, {THINKING}",
        "calls": 2,
    }
    # Each entry links its own model call (not the earlier attempt's), with what was sent and the model's text.
    assert first.model_calls.get().model == FAST and second.model_calls.get().model == THINKING
    assert '"evidence": [99]' in first.response and first.request[0]["role"] == "system"


def test_a_routed_retrospective_of_an_unknown_session_is_refused_and_nothing_is_logged(gateway, asgi_server):
    result = call_tool(f"{asgi_server}/mcp/routing", "retrospective", {"session_id": "nobody"}, headers=AUTH)
    assert result["isError"] is True
    assert "session_log" in result["content"][0]["text"]
    assert RoutingEntry.objects.count() == 0
    assert gateway.requests == []


def test_the_routed_trainer_asks_no_model_so_it_logs_no_routing_decision(gateway, asgi_server):
    a_session("train-1")
    result = call_tool(
        f"{asgi_server}/mcp/routing", "trainer", {"session_id": "train-1", "model": THINKING}, headers=AUTH
    )
    assert result.get("isError") is not True, result
    content = result["structuredContent"]
    assert (content["count"], content["model_used"], content["status"]) == (0, "", "pass")
    # no model answered, so none may be recorded as having passed
    assert RoutingEntry.objects.filter(session_id="train-1").count() == 0
    assert gateway.requests == []
