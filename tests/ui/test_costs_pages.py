"""Where a person sees what model calls cost: the Costs page, a session's and a run's page, the Tokens page."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone
from model_bakery import baker

from ledger.models import ModelCall, PersonBudget
from sessions.actions import do_log_entry
from supervisor.models import SkillRun

pytestmark = pytest.mark.django_db


def call(cost: str | None, *, person=None, days_ago: int = 0, **fields) -> ModelCall:
    values = {
        "model": "fast",
        "skill": "review",
        "project": "/srv/app",
        "provider": "openai",
        "outcome": "ok",
        "input_tokens": 100,
        "output_tokens": 10,
    } | fields
    if cost is None:
        values |= {"input_tokens": None, "output_tokens": None, "cost_source": "usage unknown"}
    return baker.make(
        ModelCall,
        requested_by=person,
        cost_usd=None if cost is None else Decimal(cost),
        created_at=timezone.now() - timedelta(days=days_ago),
        **values,
    )


def table(page: str, table_id: str) -> dict[str, list[str]]:
    """{first cell: the other cells} of a table of the page, tags stripped."""
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[cells[0]] = cells[1:]
    return rows


@pytest.fixture
def spending(staff_user, plain_user):
    call("0.0100", person=staff_user, session_id="s-big", model="thinking", skill="tdd_red")
    call("0.0020", person=plain_user, session_id="s-small", service="mcp/routing")
    call("0.0030", person=plain_user, session_id="s-small", days_ago=1, service="mcp/brain")  # the same person's row
    call(None, person=plain_user, session_id="s-small", model="mystery")  # cost unknown: counted apart
    call("0.5000", person=plain_user, days_ago=31)  # outside the 30 days
    call("0.0005", service="supervisor worker", skill="retrospective", project="")


def test_the_costs_page_sums_per_day_person_skill_model_project_and_top_sessions(staff_client, spending):
    page = staff_client.get(reverse("hyperguild-costs")).content.decode()

    assert '<b id="total-cost">0.0155</b>' in page  # 0.0100 + 0.0020 + 0.0030 + 0.0005; not the 31-day-old call
    assert '<b id="total-calls">5</b>' in page and '<b id="total-unknown">1</b>' in page
    today, yesterday = (
        timezone.now().astimezone(UTC).date(),
        (timezone.now() - timedelta(days=1)).astimezone(UTC).date(),
    )
    # Calls, input tokens, output tokens, cost, cost unknown
    assert table(page, "costs-per-day") == {
        f"{today:%Y-%m-%d}": ["4", "300", "30", "0.0125", "1"],
        f"{yesterday:%Y-%m-%d}": ["1", "100", "10", "0.0030", "0"],
    }
    assert table(page, "costs-by-person") == {
        "reviewer": ["1", "100", "10", "0.0100", "0"],
        "reader": ["3", "200", "20", "0.0050", "1"],
        "supervisor worker (service)": ["1", "100", "10", "0.0005", "0"],
    }
    assert table(page, "costs-by-skill")["review"] == ["3", "200", "20", "0.0050", "1"]
    assert table(page, "costs-by-model") == {
        "thinking": ["1", "100", "10", "0.0100", "0"],
        "fast": ["3", "300", "30", "0.0055", "0"],
        "mystery": ["1", "0", "0", "0.0000", "1"],
    }
    assert table(page, "costs-by-project") == {
        "/srv/app": ["4", "300", "30", "0.0150", "1"],
        "—": ["1", "100", "10", "0.0005", "0"],
    }
    assert list(table(page, "costs-top-sessions")) == ["s-big", "s-small"]
    assert reverse("sessions-detail", args=["s-big"]) in page
    assert 'href="/costs/" class="active">Costs</a>' in page
    assert "data-budget-warning" not in page


def test_a_budget_80_percent_spent_is_warned_about_at_the_top(staff_client, staff_user, plain_user, spending):
    PersonBudget.objects.create(person=plain_user, daily_usd=Decimal("0.01"))  # 0.0020 of it spent today: 20 %
    PersonBudget.objects.create(person=staff_user, daily_usd=Decimal("0.02"))
    call("0.0070", person=staff_user)  # 0.0100 + 0.0070 of 0.02 spent: 85 %

    page = staff_client.get(reverse("hyperguild-costs")).content.decode()

    warnings = re.findall(r"<p class=\"notice\" data-budget-warning>(.*?)</p>", page)
    assert len(warnings) == 1 and warnings[0].startswith("Your daily budget of 0.02 USD is 85% spent (0.0170 USD)")
    assert "it resets at" in warnings[0] and "00:00 UTC" in warnings[0]
    assert page.index("data-budget-warning") < page.index('id="cost-totals"')


def test_staff_hear_of_every_persons_budget_and_a_reader_only_of_their_own(
    staff_client, reader_client, plain_user, spending
):
    PersonBudget.objects.create(person=plain_user, daily_usd=Decimal("0.01"))
    call("0.0065", person=plain_user)  # 0.0020 + 0.0065 of 0.01 spent today: 85 %

    staff_page = staff_client.get(reverse("hyperguild-costs")).content.decode()
    own_page = reader_client.get(reverse("hyperguild-costs")).content.decode()

    assert "reader&#x27;s daily budget of 0.01 USD is 85% spent" in staff_page
    assert "Your daily budget of 0.01 USD is 85% spent" in own_page and "reader&#x27;s" not in own_page


def test_a_session_page_and_a_run_page_show_what_they_cost(staff_client, plain_user):
    do_log_entry("s-cost", kind="decision", message="m")
    run = baker.make(SkillRun, skill="tdd_red", status="pass", session_id="s-cost")
    worker = [
        call("0.0123", session_id="s-cost", provider="claude"),
        call("0.0100", session_id="s-cost", provider="claude"),
    ]
    run.model_calls.add(*worker)
    call(None, session_id="s-cost")  # the retrospective's call, of unknown cost
    call("0.9", session_id="another")

    session_page = staff_client.get(reverse("sessions-detail", args=["s-cost"])).content.decode()
    run_page = staff_client.get(reverse("supervisor-run", args=[run.pk])).content.decode()

    session_cost = re.search(r'<div class="stat" id="session-cost">(.*?)</div>', session_page, re.S).group(1)
    assert "<b>0.0223 USD</b>" in session_cost and "model calls: 3, 1 of unknown cost" in session_cost
    run_cost = re.search(r'<div class="stat" id="run-cost">(.*?)</div>', run_page, re.S).group(1)
    assert "<b>0.0223 USD</b>" in run_cost and "model calls: 2;" in run_cost and "200 / 20 tokens" in run_cost


def test_the_tokens_page_shows_the_persons_own_spend_today_and_this_month(
    reader_client, plain_user, staff_user, monkeypatch
):
    from ledger import budgets

    now = datetime(2026, 11, 15, 12, 0, tzinfo=UTC)
    monkeypatch.setattr(budgets, "now", lambda: now)
    PersonBudget.objects.create(person=plain_user, daily_usd=Decimal("1.00"))
    for cost, when in (("0.0020", now), ("0.0400", now - timedelta(days=3)), ("0.5000", now - timedelta(days=20))):
        ModelCall.objects.filter(pk=call(cost, person=plain_user).pk).update(created_at=when)
    call("0.0300", person=staff_user)  # someone else's

    page = reader_client.get(reverse("hyperguild-tokens")).content.decode()

    today = re.search(r'<div class="stat" id="spend-today">(.*?)</div>', page, re.S).group(1)
    month = re.search(r'<div class="stat" id="spend-month">(.*?)</div>', page, re.S).group(1)
    assert "<b>0.0020 USD</b>" in today and "of your 1.00 USD daily budget" in today
    assert "resets at 2026-11-16 00:00 UTC" in today
    assert "<b>0.0420 USD</b>" in month and "model calls: 2;" in month  # the call of October is not this month's


def test_a_reader_sees_only_their_own_spend_by_person_and_their_own_sessions(reader_client, spending):
    page = reader_client.get(reverse("hyperguild-costs")).content.decode()

    # Their own row and the service's; the reviewer's 0.0100 and session s-big are not shown to them.
    assert table(page, "costs-by-person") == {
        "reader": ["3", "200", "20", "0.0050", "1"],
        "supervisor worker (service)": ["1", "100", "10", "0.0005", "0"],
    }
    assert list(table(page, "costs-top-sessions")) == ["s-small"]
    assert "s-big" not in page and 'id="costs-own-only"' in page
    # Issue 46: no breakdown shows the others' spend either (the reviewer's 0.0100 on `thinking`, `tdd_red`).
    assert '<b id="total-cost">0.0055</b>' in page
    assert table(page, "costs-by-model") == {
        "fast": ["3", "300", "30", "0.0055", "0"],
        "mystery": ["1", "0", "0", "0.0000", "1"],
    }
    assert "tdd_red" not in table(page, "costs-by-skill") and "thinking" not in page
    assert table(page, "costs-by-project") == {
        "/srv/app": ["3", "200", "20", "0.0050", "1"],
        "—": ["1", "100", "10", "0.0005", "0"],
    }
    assert sum(Decimal(row[3]) for row in table(page, "costs-per-day").values()) == Decimal("0.0055")


def test_staff_see_everyones_spend_without_the_own_only_notice(staff_client, spending):
    page = staff_client.get(reverse("hyperguild-costs")).content.decode()

    assert "reviewer" in table(page, "costs-by-person") and 'id="costs-own-only"' not in page


@pytest.mark.django_db(transaction=True)
def test_over_http_a_reader_signed_in_sees_no_one_elses_spend_in_any_breakdown(asgi_server, staff_user, plain_user):
    # Issue 46: the by-skill, by-model and by-project tables showed the team's calls, others' included.
    import httpx

    from tests.people.test_oauth_flow import HIDDEN

    call("0.0100", person=staff_user, session_id="s-big", model="thinking", skill="tdd_red", project="/srv/secret")
    call("0.0020", person=plain_user, session_id="s-small")
    with httpx.Client(base_url=asgi_server, follow_redirects=False, timeout=30) as browser:
        login = browser.get("/login/")
        fields = dict(HIDDEN.findall(login.text))
        signed_in = browser.post(
            "/login/",
            data={
                "csrfmiddlewaretoken": fields["csrfmiddlewaretoken"],
                "next": "/",
                "username": "reader",
                "password": "pw-reader-123",
            },
        )
        assert signed_in.status_code == 302
        page = browser.get("/costs/").text
    assert '<b id="total-cost">0.0020</b>' in page
    for other in ("thinking", "tdd_red", "/srv/secret", "s-big", "0.0100", "reviewer"):
        assert other not in page, other
