"""Budgets on model calls: checked before a call is made, per person and for the whole service.

    with reserve(estimate_usd, what="review on fast"):   # raises BudgetExceeded, or holds the estimate
        ...make the call and record its ModelCall...

A call must fit every limit that applies: the service's per UTC day and month (settings) and the
person's own (`PersonBudget`, in the admin). What counts as spent in a period is the recorded cost of
the model calls made in it plus the estimates of calls in flight (`BudgetReservation`), read under
a transaction-level advisory lock, so concurrent calls cannot overshoot a budget by more than one
call's estimate. The person is the one the current `model_call_context` names (a service call has
none and counts against the service's limits only).
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TypedDict

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection, transaction
from django.db.models import Sum

from hyperguild.lib.model_calls import current_context
from hyperguild.mcp.errors import ToolError
from ledger.models import BudgetReservation, ModelCall, PersonBudget

WARN_AT = Decimal("0.8")  # a budget this much spent is warned about
RESERVATION_TTL = timedelta(hours=1)  # a reservation older than this was left by a crashed process
_LOCK_KEY = 0x6879_6275_6467  # pg_advisory_xact_lock key: one lane for every budget check


class BudgetExceeded(ToolError):
    """A call would go over a budget: the caller sees which, what was spent and when it resets."""


@dataclass(frozen=True)
class Limit:
    scope: str  # "you" or "the service"
    period: str  # "day" or "month"
    usd: Decimal
    person_id: int | None  # None: the whole service's spend counts

    def describe(self) -> str:
        owner = "your" if self.scope == "you" else "the service's"
        return f"{owner} {'daily' if self.period == 'day' else 'monthly'} budget of {format_usd(self.usd)} USD"


def format_usd(amount: Decimal | float, significant: int = 2) -> str:
    """An amount with the digits it needs: two decimals, more when the amount is smaller than a cent (a budget of
    0.002 USD is "0.002", not "0.00"), with at least `significant` significant digits and at most six decimals."""
    amount = Decimal(str(amount))
    if amount == 0:
        return "0.00"
    places = max(2, min(6, significant - 1 - amount.copy_abs().adjusted()))
    text = f"{amount:.{places}f}"
    whole, _, decimals = text.partition(".")
    decimals = decimals.rstrip("0").ljust(2, "0")
    return f"{whole}.{decimals}"


class BudgetJson(TypedDict):
    """A budget's state as /health and the Costs page show it (amounts as decimal strings)."""

    scope: str  # "person" or "service"
    person: str | None
    period: str
    limit_usd: str
    spent_usd: str
    held_usd: str
    percent: float
    resets_at: str


@dataclass(frozen=True)
class BudgetState:
    """One budget as the Costs page, the banner and /health show it."""

    limit: Limit
    spent_usd: Decimal  # recorded cost of the calls made in the period
    held_usd: Decimal  # estimates of the calls in flight
    resets_at: datetime
    person: str = ""  # whose (a personal budget), "" for the service's

    @property
    def used_usd(self) -> Decimal:
        return self.spent_usd + self.held_usd

    @property
    def fraction(self) -> float:
        return float(self.used_usd / self.limit.usd) if self.limit.usd else 1.0

    @property
    def warned(self) -> bool:
        return self.used_usd >= self.limit.usd * WARN_AT

    def as_dict(self) -> BudgetJson:
        return {
            "scope": "person" if self.limit.person_id is not None else "service",
            "person": self.person or None,
            "period": self.limit.period,
            "limit_usd": format_usd(self.limit.usd),
            "spent_usd": format_usd(self.spent_usd, 3),
            "held_usd": format_usd(self.held_usd, 3),
            "percent": round(self.fraction * 100, 1),
            "resets_at": self.resets_at.isoformat(),
        }


def now() -> datetime:
    return datetime.now(UTC)


def period_bounds(period: str, at: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the UTC day or month holding `at`."""
    at = at.astimezone(UTC)
    if period == "day":
        start = at.replace(hour=0, minute=0, second=0, microsecond=0)
        return start, start + timedelta(days=1)
    start = at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    days = calendar.monthrange(start.year, start.month)[1]
    return start, start + timedelta(days=days)


Person = User | AnonymousUser | None  # whom a call is for: only a signed-in person has a budget of their own


def limits_for(person: Person) -> list[Limit]:
    limits = []
    usd: float | Decimal | None
    for period, usd in (
        ("day", settings.HYPERGUILD_BUDGET_DAILY_USD),
        ("month", settings.HYPERGUILD_BUDGET_MONTHLY_USD),
    ):
        if usd:
            limits.append(Limit("the service", period, Decimal(str(usd)), None))
    person_id = getattr(person, "pk", None) if getattr(person, "is_authenticated", False) else None
    if person_id is not None:
        own = PersonBudget.objects.filter(person_id=person_id).first()
        if own is not None:
            for period, usd in (("day", own.daily_usd), ("month", own.monthly_usd)):
                if usd is not None:
                    limits.append(Limit("you", period, Decimal(usd), person_id))
    return limits


def spent_and_held(limit: Limit, at: datetime) -> tuple[Decimal, Decimal]:
    """Recorded cost in the limit's period, and the estimates of the calls in flight."""
    start, end = period_bounds(limit.period, at)
    calls = ModelCall.objects.filter(created_at__gte=start, created_at__lt=end, cost_usd__isnull=False)
    held = BudgetReservation.objects.filter(created_at__gte=max(start, at - RESERVATION_TTL))
    if limit.person_id is not None:
        calls, held = calls.filter(requested_by_id=limit.person_id), held.filter(person_id=limit.person_id)
    total = calls.aggregate(s=Sum("cost_usd"))["s"] or Decimal(0)
    return total, held.aggregate(s=Sum("amount_usd"))["s"] or Decimal(0)


def spent(limit: Limit, at: datetime) -> Decimal:
    """Recorded cost in the limit's period plus the estimates of the calls in flight."""
    return sum(spent_and_held(limit, at), Decimal(0))


def budget_states(people: list[User] | None = None, at: datetime | None = None) -> list[BudgetState]:
    """The service's budgets, then each of `people`'s own (every person with a budget when None)."""
    at = at or now()
    if people is None:
        people = [
            budget.person for budget in PersonBudget.objects.select_related("person").order_by("person__username")
        ]
    states = []
    for limit in limits_for(None):
        states.append(BudgetState(limit, *spent_and_held(limit, at), resets_at=period_bounds(limit.period, at)[1]))
    for person in people:
        for limit in limits_for(person):
            if limit.person_id is None:
                continue  # the service's, listed once above
            states.append(
                BudgetState(
                    limit,
                    *spent_and_held(limit, at),
                    resets_at=period_bounds(limit.period, at)[1],
                    person=person.get_username(),
                )
            )
    return states


def exceeded_message(limit: Limit, used: Decimal, estimate: Decimal, at: datetime) -> str:
    _, resets = period_bounds(limit.period, at)
    return (
        f"Budget reached: {limit.describe()} has {format_usd(used, 3)} USD spent or held, and this call may cost "
        f"up to {format_usd(estimate, 3)} USD. It resets at {resets:%Y-%m-%d %H:%M} UTC"
        + (
            " (ask an operator to raise your limit in the admin, Person budgets)."
            if limit.scope == "you"
            else " (HYPERGUILD_BUDGET_DAILY_USD / HYPERGUILD_BUDGET_MONTHLY_USD raise it)."
        )
    )


def check(estimate: Decimal, person: Person = None, *, count: int = 1) -> list[str]:
    """Raise BudgetExceeded if `count` calls of `estimate` would not fit; else the warnings: 80 % spent or more
    with this call, or too little left for one more call like it (so the last call before a refusal always
    carries a warning, even when one call's estimate is more than a fifth of the budget)."""
    at = now()
    warnings = []
    needed = estimate * count
    for limit in limits_for(person):
        used = spent(limit, at)
        if used + needed > limit.usd:
            raise BudgetExceeded(
                exceeded_message(limit, used, needed, at),
                data={
                    "budget": limit.describe(),
                    "spent_usd": float(used),
                    "limit_usd": float(limit.usd),
                    "resets_at": period_bounds(limit.period, at)[1].isoformat(),
                },
            )
        if used + needed >= limit.usd * WARN_AT or used + 2 * needed > limit.usd:
            warning = f"{limit.describe()} is {(used + needed) / limit.usd:.0%} spent"
            if used + 2 * needed > limit.usd:
                warning += (
                    f"; the next call like this one (up to {format_usd(needed, 3)} USD) will not fit before it "
                    f"resets at {period_bounds(limit.period, at)[1]:%Y-%m-%d %H:%M} UTC"
                )
            warnings.append(warning)
    return warnings


def estimate_or_default(estimate: Decimal | None) -> Decimal:
    return estimate if estimate is not None else Decimal(str(settings.HYPERGUILD_BUDGET_UNPRICED_CALL_USD))


@contextmanager
def reserve(estimate: Decimal | None, *, what: str, person: Person = None, count: int = 1) -> Iterator[list[str]]:
    """Hold `count` × `estimate` against every budget that applies while the block makes its calls."""
    person = person if person is not None else current_context().requested_by
    amount = estimate_or_default(estimate) * count
    if not limits_for(person):
        yield []  # no budget applies: nothing to hold (and no lock taken)
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            # One check at a time, so two calls never both see the room only one of them fits in.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        warnings = check(amount, person)
        held = BudgetReservation.objects.create(
            person=person if isinstance(person, User) else None, amount_usd=amount, what=what[:200]
        )
    try:
        yield warnings
    finally:
        BudgetReservation.objects.filter(pk=held.pk).delete()


def would_exceed(person: Person = None, estimate: Decimal | None = None) -> str | None:
    """Why a call would be refused now (None: it fits). For work that should skip, not fail."""
    try:
        check(estimate_or_default(estimate), person)
    except BudgetExceeded as exc:
        return exc.message
    return None


def banner_lines() -> list[str]:
    """What the banner says about budgets: the service's with spent, held and reset; how many people have one."""
    states = budget_states()
    service = [state for state in states if not state.person]
    if not service:
        lines = ["budgets: no service budget (HYPERGUILD_BUDGET_DAILY_USD, HYPERGUILD_BUDGET_MONTHLY_USD)."]
    else:
        lines = [
            f"budget: {state.limit.describe()}: {format_usd(state.spent_usd, 3)} USD spent, "
            f"{format_usd(state.held_usd, 3)} held ({state.fraction:.0%}); resets {state.resets_at:%Y-%m-%d %H:%M} UTC."
            for state in service
        ]
    people = {state.person for state in states if state.person}
    if people:
        reached = {state.person for state in states if state.person and state.warned}
        lines.append(f"personal budgets: {len(people)} people, {len(reached)} of them 80 % spent or more (/costs/).")
    return lines
