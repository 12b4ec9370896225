"""Home, sessions, routing dashboard: what they show."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from model_bakery import baker

from sessions.actions import do_log_entry
from supervisor.models import RoutingEntry, SkillRun
from tests.ui.conftest import make_example, make_raw_note

pytestmark = pytest.mark.django_db


def test_home_counts_what_is_waiting(staff_client):
    make_raw_note(), make_raw_note(), make_example("dpo")
    page = staff_client.get("/").content.decode()
    assert "<b>2</b><span>raw notes to review" in page and "<b>1</b><span>DPO candidates" in page


def test_a_session_timeline_shows_entries_skill_runs_and_notes(staff_client):
    do_log_entry("sess-t", kind="decision", message="use advisory locks", project="hyperguild")
    baker.make(SkillRun, skill="tdd_green", status="pass", verified=True, session_id="sess-t")
    make_raw_note("Advisory locks for slots", session_id="sess-t")
    listing = staff_client.get(reverse("sessions-list")).content.decode()
    assert reverse("sessions-detail", args=["sess-t"]) in listing
    page = staff_client.get(reverse("sessions-detail", args=["sess-t"])).content.decode()
    assert "use advisory locks" in page and "tdd_green" in page and "verified: yes" in page
    assert "Advisory locks for slots" in page


def test_the_session_list_runs_constant_queries(staff_client, django_assert_max_num_queries):
    do_log_entry("s-0", kind="note")
    staff_client.get(reverse("sessions-list"))
    with django_assert_max_num_queries(6) as few:
        staff_client.get(reverse("sessions-list"))
    for i in range(30):
        do_log_entry(f"s-{i + 1}", kind="note")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert "page 1 of 2" in staff_client.get(reverse("sessions-list")).content.decode()


def test_an_unknown_session_is_a_404(staff_client):
    assert staff_client.get(reverse("sessions-detail", args=["nope"])).status_code == 404


def test_the_routing_dashboard_draws_pass_rates_calls_per_model_and_decisions(staff_client, settings):
    now = timezone.now()
    for day, (passed, failed) in enumerate([(2, 2), (3, 1), (4, 0)]):
        when = now - timedelta(days=3 - day)
        for status, n in (("pass", passed), ("fail", failed)):
            for _ in range(n):
                baker.make(
                    RoutingEntry,
                    skill="review",
                    model=settings.HYPERGUILD_FAST_MODEL,
                    reason="floor",
                    status=status,
                    created_at=when,
                    latency_ms=120,
                    pass_rate_seen=0.93,
                    samples_seen=20,
                )
    baker.make(
        RoutingEntry,
        skill="debug",
        model=settings.HYPERGUILD_THINKING_MODEL,
        reason="ceil",
        status="pass",
        created_at=now,
        latency_ms=900,
        pass_rate_seen=0.4,
        samples_seen=12,
    )
    page = staff_client.get(reverse("supervisor-routing")).content.decode()
    assert page.count("<polyline") == 2 and "<svg" in page
    assert "review" in page and "debug" in page and "ceil" in page
    assert "<b>13</b><span>routed calls" in page
    assert "<b>92%</b><span>went to the fast model" in page  # 12 of 13


def test_the_routing_dashboard_with_no_data_says_so(staff_client):
    page = staff_client.get(reverse("supervisor-routing"), {"days": "bogus"}).content.decode()
    assert "No routed calls" in page


def test_a_session_sent_late_from_the_plugins_spool_shows_its_gap_first_at_its_own_times(staff_client, settings):
    from sessions.hooks import replay_spool

    settings.BRAIN_EMBEDDER = "off"
    hook = {"session_id": "sess-late", "cwd": "/home/someone/src/ledgerly", "hook_event_name": "UserPromptSubmit"}
    replay_spool(
        {
            "entries": [
                {
                    "event": "UserPromptSubmit",
                    "at": "2026-03-02T09:01:00Z",
                    "input": {**hook, "prompt": "round per line"},
                }
            ],
            "dropped": {"sess-late": 2},
            "drop_key": "1764140000-7",
        }
    )
    page = staff_client.get(reverse("sessions-detail", args=["sess-late"])).content.decode()
    assert page.index("2 hook entries of this session never arrived") < page.index("round per line")
    assert "09:01:00" in page  # when it happened, not when it arrived
