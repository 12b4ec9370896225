"""What model calls cost, and budgets that stop a call before it is made.

Costs come from the response when it says (the claude CLI's `total_cost_usd`), else from the price
table (HYPERGUILD_MODEL_PRICES_FILE) and the usage the server reported; a call whose usage or price
is unknown says so and keeps an empty cost, never a silent 0.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from model_bakery import baker

from hyperguild.lib.llm import get_llm_client
from hyperguild.lib.model_calls import model_call_context
from hyperguild.lib.reranker import RerankerClient
from ledger import budgets
from ledger.budgets import BudgetExceeded
from ledger.models import BudgetReservation, ModelCall, PersonBudget
from supervisor.models import SkillRun
from tests.fakes.helpers import run_skill_inline
from tests.fakes.openai import Reply
from tests.fakes.reranker import FakeReranker

pytestmark = pytest.mark.django_db

PRICES = "fast: {input: 1.0, output: 2.0}\nthinking: {input: 10, output: 30}\nlocal-free: {input: 0, output: 0}\n"
MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture
def prices(tmp_path, settings):
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    settings.HYPERGUILD_MODEL_PRICES_FILE = str(path)
    return path


@pytest.fixture
def ada(django_user_model):
    return django_user_model.objects.create(username="ada")


def spend(person, usd: str, *, days_ago: int = 0) -> ModelCall:
    from django.utils import timezone

    return baker.make(
        ModelCall,
        requested_by=person,
        model="fast",
        provider="openai",
        outcome="ok",
        cost_usd=Decimal(usd),
        created_at=timezone.now() - timedelta(days=days_ago),
    )


def test_a_call_with_usage_is_priced_from_the_table(gateway, prices, ada):
    gateway.queue(Reply.text("hi", usage={"prompt_tokens": 1000, "completion_tokens": 500}))
    with model_call_context(requested_by=ada, skill="review"):
        result = get_llm_client().chat(MESSAGES, model="fast", purpose="review")
    call = ModelCall.objects.get(pk=result.call_id)
    assert call.cost_usd == Decimal("0.002000")  # 1,000 × 1 USD/M + 500 × 2 USD/M
    assert (call.cost_source, call.requested_by, call.skill) == ("price table", ada, "review")


def test_a_model_missing_from_the_table_is_price_unknown_not_free(gateway, prices):
    gateway.queue(Reply.text("hi", usage={"prompt_tokens": 10, "completion_tokens": 5}))
    result = get_llm_client().chat(MESSAGES, model="someone-elses-model", purpose="answer")
    call = ModelCall.objects.get(pk=result.call_id)
    assert (call.cost_usd, call.cost_source) == (None, "price unknown")


def test_a_response_without_usage_is_usage_unknown(gateway, prices):
    gateway.queue(Reply.text("hi"))  # no usage field
    result = get_llm_client().chat(MESSAGES, model="fast", purpose="answer")
    call = ModelCall.objects.get(pk=result.call_id)
    assert (call.input_tokens, call.cost_usd, call.cost_source) == (None, None, "usage unknown")


def test_a_local_model_listed_at_zero_costs_zero(gateway, prices):
    gateway.queue(Reply.text("hi", usage={"prompt_tokens": 10, "completion_tokens": 5}))
    result = get_llm_client().chat(MESSAGES, model="local-free", purpose="answer")
    call = ModelCall.objects.get(pk=result.call_id)
    assert (call.cost_usd, call.cost_source) == (Decimal("0"), "price table")


def test_a_reranker_pass_over_three_candidates_is_one_record_priced_from_ollamas_counts(prices):
    with FakeReranker(lambda prompt: "yes", counts=(100, 1)) as ollama:
        RerankerClient(ollama.url, model="fast", concurrency=3, record=True).judge_all("deploy", ["a", "b", "c"])
    (call,) = ModelCall.objects.filter(provider="ollama")
    assert (call.input_tokens, call.output_tokens) == (300, 3)
    assert (call.cost_usd, call.cost_source) == (Decimal("0.000306"), "price table")


def test_a_reranker_answer_without_counts_is_usage_unknown(prices):
    with FakeReranker(lambda prompt: "no") as ollama:
        RerankerClient(ollama.url, model="fast", record=True).judge("deploy", "how to deploy")
    (call,) = ModelCall.objects.filter(provider="ollama")
    assert (call.cost_usd, call.cost_source) == (None, "usage unknown")


def test_a_tdd_red_run_keeps_the_cost_the_claude_envelope_reports(fake_claude, python_project, ada):
    fake_claude.script(
        [{"report": {"status": "done", "file_path": "tests/test_x.py", "summary": "s"}, "total_cost_usd": 0.0123}]
    )
    run_skill_inline("tdd_red", {"project_root": str(python_project), "spec": "double(3) is 6"})
    call = ModelCall.objects.filter(provider="claude").first()
    assert call is not None
    assert (call.cost_usd, call.cost_source) == (Decimal("0.012300"), "reported")
    assert (call.input_tokens, call.output_tokens, call.purpose) == (120, 40, "tdd_red")


def test_a_person_over_their_daily_budget_is_refused_before_the_gateway_is_called(gateway, prices, ada):
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.01"))
    spend(ada, "0.0100")
    with model_call_context(requested_by=ada, skill="brain_answer"), pytest.raises(BudgetExceeded) as refused:
        get_llm_client().chat(MESSAGES, model="fast", purpose="answer")
    assert "your daily budget of 0.01 USD" in refused.value.message
    assert "resets at" in refused.value.message and "UTC" in refused.value.message
    assert refused.value.data["spent_usd"] == pytest.approx(0.01)
    assert gateway.requests == []  # nothing was sent
    assert not BudgetReservation.objects.exists()


def test_the_next_day_the_same_person_may_call_again(gateway, prices, ada, monkeypatch):
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.01"))
    spend(ada, "0.0100")
    tomorrow = budgets.now() + timedelta(days=1)
    monkeypatch.setattr(budgets, "now", lambda: tomorrow)
    gateway.queue(Reply.text("hi", usage={"prompt_tokens": 1, "completion_tokens": 1}))
    with model_call_context(requested_by=ada):
        assert get_llm_client().chat(MESSAGES, model="fast", purpose="answer").text == "hi"


def test_the_services_monthly_budget_holds_for_everyone(gateway, prices, settings, ada):
    settings.HYPERGUILD_BUDGET_MONTHLY_USD = 0.05
    spend(None, "0.05")
    with pytest.raises(BudgetExceeded) as refused:
        get_llm_client().chat(MESSAGES, model="fast", purpose="retrospective")
    assert "the service's monthly budget of 0.05 USD" in refused.value.message
    assert "HYPERGUILD_BUDGET_MONTHLY_USD" in refused.value.message


def test_a_spent_budget_refuses_tdd_red_before_anything_is_queued_or_spawned(fake_claude, python_project, ada):
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.01"))
    spend(ada, "0.02")
    from supervisor.tools import start_skill_run

    with pytest.raises(BudgetExceeded):
        start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "s"}, requested_by=ada)
    assert not SkillRun.objects.exists()
    assert fake_claude.calls() == []


def test_a_consensus_review_must_fit_all_its_samples(fake_claude, python_project, ada, settings):
    settings.HYPERGUILD_BUDGET_UNPRICED_CALL_USD = 0.04
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.10"))
    [warning] = budgets.check(Decimal("0.04"), ada, count=2)
    assert warning.startswith("your daily budget of 0.10 USD is 80% spent")
    with pytest.raises(BudgetExceeded):
        budgets.check(Decimal("0.04"), ada, count=3)


def test_a_budget_below_a_cent_is_printed_with_the_digits_it_has(ada, settings):
    """Issue 47: a daily budget of 0.002 USD was refused as "the service's daily budget of 0.00 USD"."""
    settings.HYPERGUILD_BUDGET_DAILY_USD = 0.002
    spend(ada, "0.0015")
    with pytest.raises(BudgetExceeded) as refused:
        budgets.check(Decimal("0.0007"), ada)
    assert "the service's daily budget of 0.002 USD" in refused.value.message
    assert "0.0015 USD spent or held" in refused.value.message and "0.0007 USD" in refused.value.message
    assert "0.00 USD" not in refused.value.message


def test_the_last_call_before_a_refusal_carries_the_warning(ada):
    """Issue 47: calls of 35 % each were refused at 70 % spent, and the 80 % warning never showed."""
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.02"))
    estimate = Decimal("0.007")
    assert budgets.check(estimate, ada) == []  # 35 %, and room for another
    spend(ada, "0.007")
    [warning] = budgets.check(estimate, ada)  # 70 %: the next call like it will not fit
    assert "70% spent" in warning and "the next call like this one" in warning and "resets at" in warning
    spend(ada, "0.007")
    with pytest.raises(BudgetExceeded):
        budgets.check(estimate, ada)


def test_budget_states_show_spent_held_and_reset_apart(ada, settings):
    settings.HYPERGUILD_BUDGET_DAILY_USD = 0.002
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.5"))
    spend(ada, "0.0012")
    with model_call_context(requested_by=ada), budgets.reserve(Decimal("0.0003"), what="review"):
        service, own = (state.as_dict() for state in budgets.budget_states())
    assert service == {
        **service,
        "scope": "service",
        "person": None,
        "period": "day",
        "limit_usd": "0.002",
        "spent_usd": "0.0012",
        "held_usd": "0.0003",
        "percent": 75.0,
    }
    assert own == {**own, "scope": "person", "person": "ada", "limit_usd": "0.50", "spent_usd": "0.0012"}
    assert service["resets_at"].endswith("+00:00") and "T00:00:00" in service["resets_at"]


def test_concurrent_calls_cannot_both_take_the_last_room(transactional_db, prices, django_user_model):
    bob = django_user_model.objects.create(username="bob")
    PersonBudget.objects.create(person=bob, daily_usd=Decimal("0.10"))
    spend(bob, "0.05")
    inside, release = threading.Event(), threading.Event()
    outcomes = []

    def first():
        with budgets.reserve(Decimal("0.04"), what="first", person=bob):
            inside.set()
            release.wait(10)
        outcomes.append("first done")

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(10)
    try:
        with pytest.raises(BudgetExceeded):  # 0.05 spent + 0.04 held + 0.04 wanted > 0.10
            with budgets.reserve(Decimal("0.04"), what="second", person=bob):
                pass
    finally:
        release.set()
        thread.join(10)
    assert outcomes == ["first done"]
    assert not BudgetReservation.objects.exists()
    with budgets.reserve(Decimal("0.04"), what="third", person=bob):  # the hold was released
        pass


def test_the_hook_queued_retrospective_skips_with_a_reason_when_the_budget_is_spent(gateway, prices, ada, caplog):
    from sessions.actions import do_log_entry
    from sessions.models import AgentSession
    from sessions.tasks import retrospective

    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.01"))
    spend(ada, "0.02")
    do_log_entry("sess-budget", kind="decision", message="we decided to use pgvector", user=ada)
    AgentSession.objects.filter(external_id="sess-budget").update(started_by=ada)
    outcome = retrospective("sess-budget")
    assert "Budget reached" in outcome["skipped"]
    assert gateway.requests == []
    assert "retrospective of session sess-budget skipped" in caplog.text


def test_make_runs_banner_names_the_service_budget_with_spent_held_and_reset(ada, settings):
    from ledger.budgets import banner_lines as budget_lines

    assert budget_lines() == [
        "budgets: no service budget (HYPERGUILD_BUDGET_DAILY_USD, HYPERGUILD_BUDGET_MONTHLY_USD)."
    ]
    settings.HYPERGUILD_BUDGET_DAILY_USD = 0.02
    PersonBudget.objects.create(person=ada, daily_usd=Decimal("0.01"))
    spend(ada, "0.009")
    [service, people] = budget_lines()
    assert service.startswith("budget: the service's daily budget of 0.02 USD: 0.009 USD spent, 0.00 held (45%)")
    assert "resets 20" in service and "UTC" in service
    assert people == "personal budgets: 1 people, 1 of them 80 % spent or more (/costs/)."
