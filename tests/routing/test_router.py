"""Acceptance 1 and 3: decisions by pass rate, the sample band's share, overrides, the TTL cache."""

from __future__ import annotations

import random
import time
import types

import pytest
from django.core.cache.backends import locmem

from supervisor.models import RoutingEntry
from supervisor.routing import compute_pass_rate, decide, fast_probability, pass_rate
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, FAST, GOOD_REVIEW, THINKING, seed_history

pytestmark = pytest.mark.django_db


def test_a_skill_at_095_goes_to_the_fast_model():
    seed_history("review", 0.95)
    decision = decide("review", rng=random.Random(1))
    assert (decision.model, decision.reason) == (FAST, "floor")
    assert decision.pass_rate == pytest.approx(0.96)
    assert decision.samples == 50


def test_a_skill_at_050_goes_to_the_thinking_model():
    seed_history("review", 0.50)
    decision = decide("review", rng=random.Random(1))
    assert (decision.model, decision.reason) == (THINKING, "ceil")


def test_a_skill_at_080_is_sampled_with_the_linear_probability():
    seed_history("review", 0.80)
    decision = decide("review", rng=random.Random(1))
    assert decision.reason == "sample band"
    assert decision.fast_probability == pytest.approx(0.5)


@pytest.mark.parametrize("rate", [0.80, 0.86, 0.74])
def test_the_sample_band_share_over_1000_decisions_is_within_5_points_of_the_formula(rate):
    seed_history("debug", rate)
    rng = random.Random(42)
    fast = sum(decide("debug", rng=rng).model == FAST for _ in range(1000))
    expected = (compute_pass_rate("debug").rate - 0.70) / (0.90 - 0.70)
    assert abs(fast / 1000 - expected) <= 0.05


def test_the_band_edges_follow_floor_and_ceil():
    assert fast_probability(0.70) == 0.0
    assert fast_probability(0.90) == 1.0
    assert fast_probability(0.85) == pytest.approx(0.75)


def test_a_new_skill_below_min_samples_is_sampled_at_even_odds():
    seed_history("review", 1.0, samples=9)
    rng = random.Random(3)
    decisions = [decide("review", rng=rng) for _ in range(1000)]
    assert {d.reason for d in decisions} == {"min samples"}
    assert abs(sum(d.model == FAST for d in decisions) / 1000 - 0.5) <= 0.05


def test_a_skill_with_no_history_at_all_is_neither_trusted_nor_starved():
    decision = decide("never-seen", rng=random.Random(0))
    assert decision.reason == "min samples"
    assert decision.pass_rate is None and decision.samples == 0


def test_the_rate_covers_only_the_last_window_of_router_choices(settings):
    settings.HYPERGUILD_ROUTE_WINDOW = 10
    seed_history("review", 0.0, samples=20)
    seed_history("review", 1.0, samples=10)  # newest 10: all pass
    seed_history("review", 0.0, samples=5, model="custom")  # overrides do not count ...
    RoutingEntry.objects.filter(model="custom").update(reason="override")
    assert compute_pass_rate("review").rate == 1.0


def test_the_explicit_model_wins_and_is_logged_as_an_override(gateway, project, transactional_db, asgi_server):
    seed_history("review", 0.95)
    gateway.on("custom-model", lambda request: Reply.json(GOOD_REVIEW))

    result = call_tool(
        f"{asgi_server}/mcp/routing",
        "review",
        {"project_root": str(project), "paths": ["app.py"], "model": "custom-model", "session_id": "s-override"},
        headers=AUTH,
    )

    assert result.get("isError") is not True, result
    assert result["structuredContent"]["model_used"] == "custom-model"
    assert gateway.models_called() == ["custom-model"]
    entry = RoutingEntry.objects.get(session_id="s-override")
    assert (entry.model, entry.reason, entry.status, entry.is_final) == ("custom-model", "override", "pass", True)


@pytest.mark.parametrize(
    ("rate", "reasons", "models"),
    [(0.95, {"floor"}, {FAST}), (0.80, {"sample band"}, {FAST, THINKING}), (0.50, {"ceil"}, {THINKING})],
)
def test_seeded_histories_route_real_calls_through_the_gateway(
    rate, reasons, models, gateway, project, transactional_db, asgi_server
):
    seed_history("review", rate)
    gateway.default = lambda request: Reply.json(
        GOOD_REVIEW, usage={"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
    )

    # Three calls: on the fourth the file's pathway (promoted by three passes) would decide instead.
    for index in range(3):
        result = call_tool(
            f"{asgi_server}/mcp/routing",
            "review",
            {"project_root": str(project), "paths": ["app.py"], "session_id": f"seeded-{index}"},
            headers=AUTH,
            request_id=index,
        )
        assert result.get("isError") is not True, result

    entries = RoutingEntry.objects.filter(session_id__startswith="seeded-")
    assert {e.reason for e in entries} == reasons
    assert {e.model for e in entries} <= models
    assert set(gateway.models_called()) <= models
    assert all(e.total_tokens == 70 and e.pass_rate_seen == pytest.approx(round(rate * 50) / 50) for e in entries)
    request = gateway.requests[0]
    assert request.headers["Authorization"] == "Bearer sk-gateway"
    assert "return a - b" in request.body["messages"][1]["content"]


def test_within_the_ttl_the_rate_comes_from_the_cache_and_after_it_is_recomputed(
    django_assert_num_queries, monkeypatch, settings
):
    settings.HYPERGUILD_PASS_RATE_TTL_SECONDS = 60
    seed_history("review", 0.95)

    with django_assert_num_queries(1):
        first = pass_rate("review")
    seed_history_without_clearing_cache("review", passes=0, fails=50)
    with django_assert_num_queries(0):
        cached = pass_rate("review")
    assert cached == first

    later = time.time() + 61
    monkeypatch.setattr(locmem, "time", types.SimpleNamespace(time=lambda: later))
    with django_assert_num_queries(1):
        fresh = pass_rate("review")
    assert fresh.rate == 0.0


def test_a_ttl_of_zero_reads_the_rate_every_time(django_assert_num_queries, settings):
    settings.HYPERGUILD_PASS_RATE_TTL_SECONDS = 0
    seed_history("review", 0.95)
    with django_assert_num_queries(2):
        pass_rate("review")
        pass_rate("review")


def seed_history_without_clearing_cache(skill: str, *, passes: int, fails: int) -> None:
    from supervisor.actions import do_log_routing_entry
    from supervisor.routing import Attempt, Decision

    for index in range(passes + fails):
        do_log_routing_entry(
            skill=skill,
            decision=Decision(FAST, "floor", None, 0, None),
            attempt=Attempt("pass" if index < passes else "fail"),
            is_final=True,
        )


def test_a_cancelled_call_is_not_retried_and_its_first_attempt_is_final():
    from supervisor.routing import Attempt, RoutingFailed, route

    seed_history("review", 0.95)
    tried = []

    def attempt(model):
        tried.append(model)
        return Attempt("fail", error="invented findings.")

    with pytest.raises(RoutingFailed, match="cancelled"):
        route("review", attempt, session_id="s-cancel", cancelled=lambda: True)

    assert tried == [FAST]
    [entry] = RoutingEntry.objects.filter(session_id="s-cancel")
    assert (entry.status, entry.is_final) == ("fail", True)
