"""What a real small model answered (tests/fixtures/real-model-outputs/), replayed byte for byte through
the OpenAI-wire fake: one test per recorded failure, and what the service must make of it."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from brain import bm25
from brain.actions import do_ingest_note
from brain.answer_checks import synthesized_answer_problem
from brain.answers import answer
from ledger.models import ModelCall
from sessions.actions import do_log_entry
from sessions.models import RetrospectiveRun
from sessions.retrospective import run_retrospective
from sessions.routed_skills import routed_retrospective_result
from supervisor import routing_service
from supervisor.errors import RoutingFailed
from supervisor.models import RoutingEntry
from supervisor.routing import compute_pass_rate, routing_stats
from supervisor.skills import RetrospectiveInput, ReviewInput
from tests.conftest import free_port
from tests.fakes.recorded import answers, replay, retrospectives, reviews
from tests.routing.conftest import seed_history

pytestmark = pytest.mark.django_db

FAST, THINKING = "gemma3-270m", "gemma3-270m-thinking"


@pytest.fixture(autouse=True)
def real_model_settings(settings, gateway):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_ANSWER_MODEL = FAST
    settings.HYPERGUILD_FAST_MODEL = FAST
    settings.HYPERGUILD_THINKING_MODEL = THINKING
    settings.HYPERGUILD_ROUTE_MIN_SAMPLES = 0
    settings.HYPERGUILD_PASS_RATE_TTL_SECONDS = 0
    bm25.reset()
    cache.clear()
    yield
    bm25.reset()


def promotion_notes() -> None:
    do_ingest_note(
        title="Promoting a raw note",
        wing="guides",
        slug="promoting-raw-notes",
        source="test",
        body="A reviewer promotes a raw note into the wiki from the review queue: open /review, pick the "
        "note, choose its wing and hall, press Promote.",
    )
    do_ingest_note(
        title="Personal tokens",
        wing="guides",
        slug="personal-tokens",
        source="test",
        body="A personal token lasts 90 days before it expires, unless made with --expires-days.",
    )


# --- 1. brain_answer: cut off, uncited, degenerate ------------------------------------------


@pytest.mark.parametrize("exchange", answers(), ids=lambda e: f"exchange{e.index}")
def test_a_real_models_cut_off_degenerate_answer_returns_the_passages_with_a_reason(gateway, exchange):
    promotion_notes()
    gateway.queue(replay(exchange))
    question = exchange.request["messages"][1]["content"].rsplit("Question: ", 1)[1]

    result = answer(question)

    assert result["synthesized"] is False and result["model"] is None
    assert "cut off at the token limit" in result["reason"]
    assert exchange.content.strip()[:40] not in result["answer"]  # the model's text is not passed off as the answer
    assert result["answer"].startswith("[1] ") and result["sources"]
    call = ModelCall.objects.get()
    assert (call.outcome, call.finish_reason, call.purpose) == ("truncated", "length", "answer")
    assert call.response == exchange.response  # the raw body, kept as received


@pytest.mark.parametrize("exchange", answers(), ids=lambda e: f"exchange{e.index}")
def test_the_recorded_answers_are_refused_even_when_not_cut_off(exchange):
    """Template tokens and loops are caught on their own, not only through finish_reason."""
    problem = synthesized_answer_problem(exchange.content, sources=5, truncated=False)
    assert problem is not None and "degenerate" in problem


def test_a_clean_cited_answer_is_accepted_and_one_citing_a_missing_source_is_not():
    assert synthesized_answer_problem("Open /review and press Promote [1].", sources=2, truncated=False) is None
    assert "only 2 source(s)" in synthesized_answer_problem("See [3].", sources=2, truncated=False)
    assert "cites no source" in synthesized_answer_problem("Open /review.", sources=2, truncated=False)
    looping = "\n".join(["The user role is a role."] * 5)
    assert "repeated 5 times" in synthesized_answer_problem(looping + "\nSee [1].", sources=1, truncated=False)


# --- 3. the supervisor's retrospective: wrong shapes leave a failed run with the model's text ----------


def a_session(session_id: str) -> None:
    do_log_entry(session_id, kind="skill", skill="tdd_green", status="fail", message="ImportError: unidecode")
    do_log_entry(session_id, kind="skill", skill="tdd_green", status="pass", message="added unidecode; green")
    do_log_entry(session_id, kind="decision", message="Slugs stay ASCII")


@pytest.mark.parametrize("exchange", retrospectives(FAST), ids=lambda e: f"exchange{e.index}")
def test_a_real_models_wrong_shape_retrospective_leaves_a_failed_run_with_its_text(gateway, exchange):
    a_session("s-real")
    gateway.queue(replay(exchange))

    result = run_retrospective("s-real", llm_model=FAST).model_dump(mode="json")

    assert result["status"] == "error" and "nothing was written" in result["message"]
    run = RetrospectiveRun.objects.get()
    assert (run.status, run.method, run.model) == ("malformed", "llm", FAST)
    assert run.model_output == exchange.content
    call = run.model_calls.get()
    assert call.response == exchange.response
    assert call.outcome == ("truncated" if exchange.finish_reason == "length" else "bad_output")
    assert call.request["messages"][0]["content"].startswith("You review the log")


# --- 4. routed calls: request and raw text kept, the actual cause named, outages apart ----------


def test_a_routed_retrospective_keeps_the_request_and_each_models_raw_text(gateway, settings):
    a_session("s-routed")
    seed_history("retrospective", 0.95, model=FAST)  # the router picks the fast model first
    fast_reply, thinking_reply = retrospectives(FAST)[0], retrospectives(THINKING)[0]
    gateway.on(FAST, lambda request: replay(fast_reply)).on(THINKING, lambda request: replay(thinking_reply))

    with pytest.raises(RoutingFailed):
        routed_retrospective_result(RetrospectiveInput(session_id="s-routed"))

    first, second = RoutingEntry.objects.exclude(session_id="seed").order_by("id")
    assert (first.model, first.status, second.model, second.status) == (FAST, "fail", THINKING, "fail")
    for entry, exchange in ((first, fast_reply), (second, thinking_reply)):
        assert entry.request[0]["content"].startswith("You review the log")  # the messages sent
        assert entry.response == exchange.content  # the model's own text, not hyperguild's result
        assert entry.model_calls.get().response == exchange.response


def test_a_routed_review_answered_with_empty_objects_keeps_request_and_response_and_names_the_cause(
    gateway, settings, tmp_path
):
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a - b\n")
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp_path)]
    seed_history("review", 0.95, model=FAST)  # the router picks the fast model first
    fast_reply, thinking_reply = reviews()
    gateway.on(FAST, lambda request: replay(fast_reply)).on(THINKING, lambda request: replay(thinking_reply))

    with pytest.raises(RoutingFailed) as caught:
        routing_service.review(
            ReviewInput(project_root=str(tmp_path), paths=["app.py"]), lambda *a: None, lambda: False
        )

    message = str(caught.value)
    assert "findings" in message and "Check the gateway" not in message
    first, second = RoutingEntry.objects.exclude(session_id="seed").order_by("id")
    for entry, exchange in ((first, fast_reply), (second, thinking_reply)):
        assert entry.status == "fail"
        assert entry.request[0]["content"].startswith("# Discipline: review")
        assert entry.response == exchange.content
        call = entry.model_calls.get()
        assert (call.outcome, call.response) == ("bad_output", exchange.response)


def test_a_gateway_that_refuses_connections_is_an_outage_never_counted_in_a_pass_rate(settings, tmp_path):
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a - b\n")
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp_path)]
    seed_history("review", 0.95, model=FAST)  # the router picks the fast model first
    before = compute_pass_rate("review")
    settings.LITELLM_BASE_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens: connection refused

    with pytest.raises(RoutingFailed) as caught:
        routing_service.review(
            ReviewInput(project_root=str(tmp_path), paths=["app.py"]), lambda *a: None, lambda: False
        )

    assert "outage" in str(caught.value) and "Check the gateway (LITELLM_BASE_URL) knows" not in str(caught.value)
    calls = RoutingEntry.objects.exclude(session_id="seed")
    assert list(calls.order_by("id").values_list("model", "status")) == [(FAST, "outage"), (THINKING, "outage")]
    assert compute_pass_rate("review") == before  # 0.95 of 50, as before the outage
    stats = routing_stats(calls.earliest("created_at").created_at)
    assert (stats.calls, stats.attempts, stats.outages) == (0, 0, 2)
    assert stats.skills["review"].pass_rate is None and stats.skills["review"].outages == 2
    assert set(ModelCall.objects.values_list("outcome", flat=True)) == {"outage"}
