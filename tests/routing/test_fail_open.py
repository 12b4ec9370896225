"""Acceptance 2 and 4: fail-open onto the thinking model, both-fail errors, 32 concurrent calls."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from supervisor.models import RoutingEntry
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, FAST, GOOD_REVIEW, INVENTED_REVIEW, THINKING, seed_history

pytestmark = pytest.mark.django_db(transaction=True)


def review(asgi_server: str, project, session_id: str, request_id: int = 1, **extra) -> dict:
    arguments = {"project_root": str(project), "paths": ["app.py"], "session_id": session_id, **extra}
    return call_tool(f"{asgi_server}/mcp/routing", "review", arguments, headers=AUTH, request_id=request_id)


def test_a_fast_model_the_gateway_does_not_know_fails_open_onto_the_thinking_model(gateway, project, asgi_server):
    seed_history("review", 0.95)
    gateway.on(THINKING, lambda request: Reply.json(GOOD_REVIEW))  # FAST has no handler: 400 model not found

    result = review(asgi_server, project, "s-open")

    assert result.get("isError") is not True, result
    content = result["structuredContent"]
    assert (content["status"], content["model_used"], content["attempts"]) == ("pass", THINKING, 2)
    assert content["findings"][0]["file"] == "app.py"
    assert gateway.models_called() == [FAST, THINKING]
    first, second = RoutingEntry.objects.filter(session_id="s-open").order_by("id")
    assert (first.model, first.reason, first.status, first.is_final) == (FAST, "floor", "fail", False)
    assert "Invalid model name passed in model=fast-model" in first.error
    assert (second.model, second.reason, second.status, second.is_final) == (THINKING, "fail-open retry", "pass", True)
    assert second.attempt_of_id == first.id


def test_an_answer_that_fails_the_grounding_check_also_fails_open(gateway, project, asgi_server):
    seed_history("review", 0.95)
    gateway.on(FAST, lambda request: Reply.json(INVENTED_REVIEW))
    gateway.on(THINKING, lambda request: Reply.json(GOOD_REVIEW))

    result = review(asgi_server, project, "s-ground")

    assert result["structuredContent"]["model_used"] == THINKING
    first = RoutingEntry.objects.get(session_id="s-ground", attempt_of__isnull=True)
    assert first.status == "fail"
    assert "not grounded" in first.error
    assert json.loads(first.response) == INVENTED_REVIEW


def test_when_both_models_fail_the_call_is_an_error_naming_both(gateway, project, asgi_server):
    seed_history("review", 0.95)
    gateway.on(THINKING, lambda request: Reply.text("I would rather chat about the weather."))

    result = review(asgi_server, project, "s-both")

    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert FAST in text and THINKING in text
    assert "Invalid model name" in text and "not JSON" in text
    assert "Check the gateway (LITELLM_BASE_URL) knows both models" in text  # the fast model was refused
    final = RoutingEntry.objects.get(session_id="s-both", is_final=True)
    assert (final.model, final.status, final.reason) == (THINKING, "fail", "fail-open retry")
    assert RoutingEntry.objects.filter(session_id="s-both").count() == 2


def test_a_failed_thinking_model_choice_is_not_retried(gateway, project, asgi_server):
    seed_history("review", 0.50)
    gateway.on(THINKING, lambda request: Reply.error(503, "overloaded"))

    result = review(asgi_server, project, "s-think")

    assert result["isError"] is True
    assert "overloaded" in result["content"][0]["text"]
    assert "outage" in result["content"][0]["text"]  # the hint names the cause: the gateway, not the model
    [entry] = RoutingEntry.objects.filter(session_id="s-think")
    # A 503 is an outage: logged, but not a failure of the model.
    assert (entry.model, entry.reason, entry.status, entry.is_final) == (THINKING, "ceil", "outage", True)


def test_32_concurrent_routed_calls_each_get_exactly_one_final_entry(gateway, project, asgi_server):
    seed_history("review", 0.80)  # sample band: both models get traffic
    counter = iter(range(10_000))
    lock = threading.Lock()

    def fast(request):
        with lock:
            n = next(counter)
        # Every third fast answer is invented, so some calls fail open.
        return Reply.json(INVENTED_REVIEW if n % 3 == 0 else GOOD_REVIEW, delay=0.05)

    gateway.on(FAST, fast)
    gateway.on(THINKING, lambda request: Reply.json(GOOD_REVIEW, delay=0.05))

    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(lambda i: review(asgi_server, project, f"c-{i}", request_id=i), range(32)))

    assert all(r.get("isError") is not True for r in results), [r for r in results if r.get("isError")]
    entries = RoutingEntry.objects.filter(session_id__startswith="c-")
    finals = entries.filter(is_final=True)
    assert finals.count() == 32
    assert sorted(finals.values_list("session_id", flat=True)) == sorted(f"c-{i}" for i in range(32))
    retries = entries.filter(reason="fail-open retry")
    assert entries.count() == 32 + retries.count()
    assert all(r.attempt_of.session_id == r.session_id for r in retries)
