"""Pathway memory: probation, promotion (reason "pathway"), sticky retirement, bug fingerprints, the dashboard."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from supervisor.models import Pathway, RoutingEntry
from supervisor.routing import Attempt, PathwayKey, RoutingFailed, pathway_area, route
from tests.conftest import call_tool
from tests.fakes.openai import Reply
from tests.routing.conftest import AUTH, FAST, GOOD_REVIEW, THINKING, seed_history

KEY = PathwayKey.of("review", "src/billing/invoice.py", "paths")


class Fixed:
    """A router RNG that always draws the same number."""

    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value


def call(outcomes: dict[str, bool], *, rng: float = 0.1, key: PathwayKey = KEY) -> list[RoutingEntry]:
    """One routed call whose attempt on each model passes or fails as `outcomes` says; its entries."""

    def attempt(model: str) -> Attempt:
        return Attempt(
            RoutingEntry.Status.PASS if outcomes[model] else RoutingEntry.Status.FAIL, data={}, error="scripted"
        )

    before = set(RoutingEntry.objects.values_list("id", flat=True))
    try:
        route("review", attempt, rng=Fixed(rng), pathway=key)
    except RoutingFailed:
        pass
    return list(RoutingEntry.objects.exclude(id__in=before).order_by("id"))


def test_the_area_is_the_first_two_path_segments():
    assert pathway_area("src/billing/invoice.py") == "src/billing"
    assert pathway_area("./app.py") == "app.py"
    assert KEY.key == "review|src/billing|paths"


@pytest.mark.django_db
def test_three_successful_replays_promote_a_pathway_and_the_fourth_call_uses_it():
    # No history: the skill-wide rule samples ("min samples"); rng 0.1 picks the fast model.
    for _ in range(3):
        [entry] = call({FAST: True, THINKING: True})
        assert entry.reason == "min samples" and entry.model == FAST

    pathway = Pathway.objects.get(key=KEY.key)
    assert (pathway.state, pathway.recommended_model, pathway.replays, pathway.successes) == ("promoted", FAST, 3, 3)

    # rng 0.9 would send the skill-wide rule to the thinking model; the pathway decides instead.
    [fourth] = call({FAST: True, THINKING: True}, rng=0.9)
    assert (fourth.reason, fourth.model, fourth.pathway_id) == ("pathway", FAST, pathway.pk)
    other = call({FAST: True, THINKING: True}, rng=0.9, key=PathwayKey.of("review", "src/other/x.py", "paths"))
    assert other[0].reason == "min samples" and other[0].model == THINKING  # another area: no memory yet


@pytest.mark.django_db
def test_a_pathway_below_080_after_probation_retires_and_never_comes_back(settings):
    settings.HYPERGUILD_ROUTE_MIN_SAMPLES = 1000  # the skill-wide rule keeps sampling, so rng 0.1 means fast
    for _ in range(3):
        call({FAST: True, THINKING: True})
    failed, rescued = call({FAST: False, THINKING: True}, rng=0.9)  # decided by the pathway, fails, fails open
    assert (failed.reason, failed.model, rescued.reason) == ("pathway", FAST, "fail-open retry")

    pathway = Pathway.objects.get(key=KEY.key)
    assert (pathway.state, pathway.replays, pathway.successes) == ("retired", 4, 3)  # 0.75 < 0.80
    assert pathway.retired_at is not None

    # Many successes later the rate is back above 0.80, but a retired pathway stays retired.
    for _ in range(10):
        entries = call({FAST: True, THINKING: True})
        assert entries[0].reason == "min samples"
    pathway.refresh_from_db()
    assert pathway.state == "retired" and pathway.success_rate > 0.8
    assert pathway.attempts_by_model[FAST] == {"attempts": 14, "passes": 13}


@pytest.mark.django_db
def test_a_pathway_that_fails_during_probation_is_retired_before_it_ever_decides():
    call({FAST: True, THINKING: True})
    call({FAST: False, THINKING: True})
    call({FAST: False, THINKING: True})

    pathway = Pathway.objects.get(key=KEY.key)
    assert (pathway.state, pathway.replays, pathway.successes) == ("retired", 3, 1)
    assert not RoutingEntry.objects.filter(reason="pathway").exists()


@pytest.mark.django_db
def test_an_override_teaches_the_pathway_nothing():
    def attempt(model: str) -> Attempt:
        return Attempt(RoutingEntry.Status.PASS, data={})

    for _ in range(4):
        route("review", attempt, override="custom-model", pathway=KEY)

    assert not Pathway.objects.filter(key=KEY.key).exists()


@pytest.mark.django_db(transaction=True)
def test_routed_reviews_promote_the_files_pathway_and_carry_its_bug_fingerprints(gateway, project, asgi_server):
    seed_history("review", 0.95)
    gateway.on(FAST, lambda request: Reply.json(GOOD_REVIEW))

    for index in range(4):
        result = call_tool(
            f"{asgi_server}/mcp/routing",
            "review",
            {"project_root": str(project), "paths": ["app.py"], "session_id": f"p-{index}"},
            headers=AUTH,
            request_id=index,
        )
        assert result["structuredContent"]["status"] == "pass", result

    reasons = list(
        RoutingEntry.objects.filter(session_id__startswith="p-").order_by("id").values_list("reason", flat=True)
    )
    assert reasons == ["floor", "floor", "floor", "pathway"]
    pathway = Pathway.objects.get(key="review|app.py|paths")
    assert pathway.state == "promoted" and pathway.entries.count() == 4
    [seen] = pathway.fingerprints
    assert (seen["fingerprint"], seen["count"], seen["file"], seen["line"]) == ("major:a,b", 4, "app.py", 2)
    first_prompt = gateway.requests[0].body["messages"][1]["content"]
    later_prompt = gateway.requests[1].body["messages"][1]["content"]
    assert "Seen here before" not in first_prompt
    assert later_prompt.startswith("Seen here before") and "major:a,b" in later_prompt

    staff = get_user_model().objects.create_superuser("paths", password="pw-paths-123")
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("supervisor-routing")).content.decode()
    assert "review|app.py|paths" in page and "promoted" in page and "major:a,b" in page
    admin = client.get(reverse("admin:supervisor_pathway_changelist"))
    assert admin.status_code == 200 and "app.py" in admin.content.decode()
