"""Over MCP with a person's own token: what a call's model calls cost is in its result, and a spent budget stops it.

The worker is the fake `claude` (its envelope reports `total_cost_usd` and usage); the routed models and
brain_answer's LLM are the OpenAI-wire fake gateway on 127.0.0.1, priced from a price table.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.cache import cache

from brain import bm25
from ledger.models import ModelCall, PersonBudget
from supervisor.models import SkillRun
from tests.answers.conftest import HYPERGUILD_NOTES, ingest
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.people.conftest import bearer, make_person, token_for
from tests.routing.conftest import FAST, GOOD_REVIEW, THINKING

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER_MODEL = "answer-model"
PRICES = f"{FAST}: {{input: 1.0, output: 2.0}}\n{THINKING}: {{input: 10, output: 30}}\n{ANSWER_MODEL}: {{input: 0, output: 0}}\n"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}
QUESTION = "why did every LiteLLM call fail with an unknown model error?"


@pytest.fixture
def ada(asgi_server, settings, tmp_path):
    """A person with a token for every endpoint, on a server where every endpoint needs a token."""
    settings.BRAIN_MCP_TOKEN, settings.SUPERVISOR_MCP_TOKEN, settings.ROUTING_MCP_TOKEN = "b-env", "s-env", "r-env"
    settings.BRAIN_EMBEDDER, settings.BRAIN_RERANKER_URL = "off", ""
    settings.HYPERGUILD_FAST_MODEL, settings.HYPERGUILD_THINKING_MODEL = FAST, THINKING
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES)
    settings.HYPERGUILD_MODEL_PRICES_FILE = str(prices)
    cache.clear()
    bm25.reset()
    person = make_person("ada", "operator")  # supervisor:run and routing:run are an operator's (issue 35)
    person.token = token_for("ada", "brain:read", "supervisor:run", "routing:run")
    yield person
    bm25.reset()
    cache.clear()


def spend(person, usd: str) -> None:
    ModelCall.objects.create(
        requested_by=person,
        model=FAST,
        provider="openai",
        outcome="ok",
        cost_usd=Decimal(usd),
        cost_source="price table",
    )


def call(server: str, endpoint: str, tool: str, arguments: dict, person) -> dict:
    return call_tool(f"{server}/mcp/{endpoint}", tool, arguments, headers=bearer(person.token))


# --- usage in the result -------------------------------------------------------------------------


def test_a_tdd_red_result_carries_the_usage_the_claude_envelope_reported(
    asgi_server, ada, fake_claude, python_project, skill_worker, settings
):
    settings.SUPERVISOR_MAX_ATTEMPTS = 1
    fake_claude.script(
        [{"report": {"status": "done", "file_path": "tests/test_x.py", "summary": "s"}, "total_cost_usd": 0.0123}]
    )

    result = call(
        asgi_server, "supervisor", "tdd_red", {"project_root": str(python_project), "spec": "double(3) is 6"}, ada
    )

    assert result["isError"] is False, result
    usage = result["structuredContent"]["usage"]
    assert usage == {
        "input_tokens": 120,
        "output_tokens": 40,
        "cost_usd": pytest.approx(0.0123),
        "model": usage["model"],
        "calls": 1,
    }
    (worker_call,) = ModelCall.objects.filter(provider="claude")
    assert (worker_call.requested_by, usage["model"]) == (ada, worker_call.model)
    assert "budget_warning" not in result["structuredContent"]


def test_a_consensus_review_sums_the_usage_of_every_reviewer(
    asgi_server, ada, fake_claude, python_project, skill_worker
):
    review = {"verdict": "approve", "summary": "fine", "findings": []}
    fake_claude.script([{"report": review, "total_cost_usd": 0.01}, {"report": review, "total_cost_usd": 0.02}])

    arguments = {"project_root": str(python_project), "paths": ["calc.py"], "consensus": 2}
    result = call(asgi_server, "supervisor", "review", arguments, ada)

    assert result["isError"] is False, result
    usage = result["structuredContent"]["usage"]
    assert (usage["calls"], usage["input_tokens"], usage["output_tokens"]) == (2, 240, 80)
    assert usage["cost_usd"] == pytest.approx(0.03)
    assert len(fake_claude.calls()) == 2


def test_a_routed_review_result_carries_usage_priced_from_the_table(asgi_server, ada, gateway, python_project):
    for model in (FAST, THINKING):
        gateway.on(model, lambda request, model=model: Reply.json(GOOD_REVIEW | {"findings": []}, usage=USAGE))

    arguments = {"project_root": str(python_project), "paths": ["calc.py"]}
    result = call(asgi_server, "routing", "review", arguments, ada)

    assert result["isError"] is False, result
    usage = result["structuredContent"]["usage"]
    asked = [request.body["model"] for request in gateway.requests]
    price = {FAST: 0.002, THINKING: 0.025}  # 1,000 input and 500 output tokens at the table's prices
    assert usage == {
        "input_tokens": 1000 * len(asked),
        "output_tokens": 500 * len(asked),
        "cost_usd": pytest.approx(sum(price[model] for model in asked)),
        "model": ", ".join(dict.fromkeys(asked)),
        "calls": len(asked),
    }


def test_a_call_whose_usage_is_unknown_says_so_instead_of_a_zero(asgi_server, ada, gateway, python_project):
    for model in (FAST, THINKING):
        gateway.on(model, lambda request: Reply.json(GOOD_REVIEW | {"findings": []}))  # no usage field

    result = call(asgi_server, "routing", "review", {"project_root": str(python_project), "paths": ["calc.py"]}, ada)

    usage = result["structuredContent"]["usage"]
    assert (usage["cost_usd"], usage["cost_reason"], usage["input_tokens"]) == (None, "usage unknown", None)


def test_a_model_missing_from_the_price_table_is_price_unknown(asgi_server, ada, gateway, python_project, settings):
    settings.HYPERGUILD_MODEL_PRICES_FILE = ""
    for model in (FAST, THINKING):
        gateway.on(model, lambda request: Reply.json(GOOD_REVIEW | {"findings": []}, usage=USAGE))

    result = call(asgi_server, "routing", "review", {"project_root": str(python_project), "paths": ["calc.py"]}, ada)

    usage = result["structuredContent"]["usage"]
    assert (usage["cost_usd"], usage["cost_reason"], usage["input_tokens"]) == (
        None,
        "price unknown",
        1000 * usage["calls"],
    )


def test_brain_answer_carries_usage_and_a_warning_when_the_budget_is_nearly_spent(asgi_server, ada, gateway, settings):
    settings.BRAIN_ANSWER_MODEL = ANSWER_MODEL
    ingest(HYPERGUILD_NOTES)
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.01"))
    spend(ada, "0.009")
    gateway.on(ANSWER_MODEL, lambda request: Reply.text("Check the config into git [1].", usage=USAGE))

    result = call(asgi_server, "brain", "brain_answer", {"question": QUESTION}, ada)

    assert result["isError"] is False, result
    answer = result["structuredContent"]
    assert answer["usage"] == {
        "input_tokens": 1000,
        "output_tokens": 500,
        "cost_usd": 0.0,
        "model": ANSWER_MODEL,
        "calls": 1,
    }
    assert answer["budget_warning"] == "your daily budget of 0.01 USD is 90% spent"


def test_a_result_without_a_model_call_carries_no_usage(asgi_server, ada):
    ingest(HYPERGUILD_NOTES)  # no LLM: the answer is extracted passages

    answer = call(asgi_server, "brain", "brain_answer", {"question": QUESTION}, ada)["structuredContent"]

    assert answer["synthesized"] is False
    assert "usage" not in answer and "budget_warning" not in answer


# --- acceptance 2: a spent daily budget ----------------------------------------------------------


@pytest.fixture
def spent_today(ada):
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.01"))
    spend(ada, "0.0100")
    return ada


def assert_refused_naming_the_budget(result: dict) -> None:
    assert result["isError"] is True, result
    text = result["content"][0]["text"]
    assert "your daily budget of 0.01 USD" in text
    assert "resets at" in text and "00:00 UTC" in text


def test_a_spent_budget_refuses_tdd_red_and_spawns_nothing(
    asgi_server, spent_today, fake_claude, python_project, skill_worker
):
    result = call(asgi_server, "supervisor", "tdd_red", {"project_root": str(python_project), "spec": "s"}, spent_today)

    assert_refused_naming_the_budget(result)
    assert fake_claude.calls() == []
    assert not SkillRun.objects.exists()


def test_a_spent_budget_refuses_a_routed_review_and_calls_no_model(asgi_server, spent_today, gateway, python_project):
    gateway.on(FAST, lambda request: Reply.json(GOOD_REVIEW))
    gateway.on(THINKING, lambda request: Reply.json(GOOD_REVIEW))

    result = call(
        asgi_server, "routing", "review", {"project_root": str(python_project), "paths": ["calc.py"]}, spent_today
    )

    assert_refused_naming_the_budget(result)
    assert gateway.requests == []


def test_a_spent_budget_refuses_brain_answer_instead_of_falling_back_to_passages(
    asgi_server, spent_today, gateway, settings
):
    settings.BRAIN_ANSWER_MODEL = FAST  # a priced model (one priced at 0 still fits a budget spent to the cent)
    ingest(HYPERGUILD_NOTES)

    result = call(asgi_server, "brain", "brain_answer", {"question": QUESTION}, spent_today)

    assert_refused_naming_the_budget(result)
    assert gateway.requests == []
