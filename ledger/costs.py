"""What model calls cost, summed for the pages that show it (the Costs page, a session, a run, the Tokens page).

Every figure is a sum over ModelCall records. A call whose cost is unknown (its usage or its model's price)
is counted apart as `unknown`, never as 0: `cost` is the sum of the known costs only, and a page shows
how many calls it leaves out. Days and months are UTC, as the budgets' are (ledger.budgets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, TypedDict

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDay

from ledger import budgets
from ledger.models import ModelCall, PersonBudget

COSTS_DAYS = 30  # the Costs page's window, in UTC days
TOP_SESSIONS = 10
ZERO = Decimal(0)


def _figures() -> dict[str, Any]:
    return {
        "calls": Count("id"),
        # Named apart from the fields they sum: an annotation may not shadow a field the filter reads.
        "tokens_in": Coalesce(Sum("input_tokens"), 0),
        "tokens_out": Coalesce(Sum("output_tokens"), 0),
        "cost": Coalesce(Sum("cost_usd"), ZERO),
        "unknown": Count("id", filter=Q(cost_usd__isnull=True)),
    }


@dataclass(frozen=True)
class Spend:
    calls: int
    tokens_in: int
    tokens_out: int
    cost: Decimal  # USD, the known costs only
    unknown: int  # calls whose cost is unknown, left out of cost


def spend_of(calls: QuerySet[ModelCall]) -> Spend:
    return Spend(**calls.aggregate(**_figures()))


def grouped(calls: QuerySet[ModelCall], field: str) -> list[dict[str, Any]]:
    """One row per value of `field`, the most expensive first."""
    return list(calls.values(field).annotate(**_figures()).order_by("-cost", "-calls", field))


class CostsReport(TypedDict):
    """The Costs page's tables (its template context); each row is a `values()` row with `_figures()`."""

    since: datetime
    total: Spend
    per_day: Sequence[Mapping[str, Any]]
    by_person: list[Mapping[str, Any]]
    by_skill: list[dict[str, Any]]
    by_model: list[dict[str, Any]]
    by_project: list[dict[str, Any]]
    top_sessions: list[Mapping[str, Any]]


def costs_report(
    now: datetime | None = None, days: int = COSTS_DAYS, *, only_person: User | None = None
) -> CostsReport:
    """The Costs page's tables over the last `days` UTC days (today included).

    With `only_person`, every table and total counts that person's calls and the service parts' (calls of no
    person) only: a breakdown by skill, model or project of the team's calls showed what others spent, once
    one's own rows were taken away (issue 46)."""
    now = now or budgets.now()
    start = budgets.period_bounds("day", now)[0] - timedelta(days=days - 1)
    calls = ModelCall.objects.filter(created_at__gte=start)
    if only_person is not None:
        calls = calls.filter(Q(requested_by=only_person) | Q(requested_by__isnull=True))
    per_day = list(
        calls.annotate(day=TruncDay("created_at", tzinfo=UTC)).values("day").annotate(**_figures()).order_by("-day")
    )
    # A person's calls are theirs whichever endpoint made them; a call with no person is its service part's.
    personal = calls if only_person is None else calls.filter(requested_by=only_person)
    # Typed as plain rows: the stubs cannot see the annotations that **_figures() adds.
    people: QuerySet[ModelCall, Mapping[str, Any]] = (
        personal.filter(requested_by__isnull=False).values("requested_by__username").annotate(**_figures())
    )
    services: QuerySet[ModelCall, Mapping[str, Any]] = (
        calls.filter(requested_by__isnull=True).values("service").annotate(**_figures())
    )
    by_person = sorted([*people, *services], key=lambda row: (-row["cost"], -row["calls"]))
    sessions = personal.exclude(session_id="").values("session_id").annotate(**_figures())
    return {
        "since": start,
        "total": spend_of(calls),
        "per_day": per_day,
        "by_person": by_person,
        "by_skill": grouped(calls, "skill"),
        "by_model": grouped(calls, "model"),
        "by_project": grouped(calls, "project"),
        "top_sessions": list(sessions.order_by("-cost", "-calls")[:TOP_SESSIONS]),  # type: ignore[misc]  # the stubs cannot see the **_figures() annotations
    }


def spend_between(person: User, start: datetime, end: datetime) -> Spend:
    return spend_of(ModelCall.objects.filter(requested_by=person, created_at__gte=start, created_at__lt=end))


@dataclass(frozen=True)
class OwnSpend:
    """A person's own spend this UTC day and month, with their limits (None: no limit)."""

    today: Spend
    month: Spend
    daily_usd: Decimal | None
    monthly_usd: Decimal | None
    day_resets: datetime
    month_resets: datetime


def own_spend(person: User, now: datetime | None = None) -> OwnSpend:
    """A person's own spend this UTC day and month, with their limits (None: no limit)."""
    now = now or budgets.now()
    budget = PersonBudget.objects.filter(person=person).first()
    day, month = budgets.period_bounds("day", now), budgets.period_bounds("month", now)
    return OwnSpend(
        today=spend_between(person, *day),
        month=spend_between(person, *month),
        daily_usd=budget.daily_usd if budget else None,
        monthly_usd=budget.monthly_usd if budget else None,
        day_resets=day[1],
        month_resets=month[1],
    )


def budget_warnings(viewer: User) -> list[str]:
    """The budgets 80 % spent or more that `viewer` should hear of: their own and the service's, and for
    staff every person's."""
    at = budgets.now()
    people = [viewer]
    if getattr(viewer, "is_staff", False):
        people += [budget.person for budget in PersonBudget.objects.select_related("person").exclude(person=viewer)]
    warnings: list[str] = []
    for person in people:
        for limit in budgets.limits_for(person):
            if limit.scope == "the service" and person is not viewer:
                continue  # said once, for the viewer
            used = budgets.spent(limit, at)
            if used >= limit.usd * budgets.WARN_AT:
                what = limit.describe()
                what = (
                    what.replace("your", f"{person.get_username()}'s", 1)
                    if person is not viewer
                    else what[0].upper() + what[1:]
                )
                resets = budgets.period_bounds(limit.period, at)[1]
                warnings.append(
                    f"{what} is {used / limit.usd:.0%} spent ({used:.4f} USD); it resets at {resets:%Y-%m-%d %H:%M} UTC"
                )
    return warnings
