"""The Costs page: what model calls cost, per day, person, skill, model and project, and the budgets."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from hyperguild.lib.typed import AuthenticatedHttpRequest
from hyperguild.ui import may
from ledger.budgets import budget_states
from ledger.costs import COSTS_DAYS, budget_warnings, costs_report


@login_required
def costs(request: AuthenticatedHttpRequest) -> HttpResponse:
    """What model calls cost over the last 30 UTC days: per day, person, skill, model, project; top sessions."""
    # Other people's spend is for operators (and staff), who hold the permission that reads /metrics.
    everyone = may(request.user, "hyperguild.view_metrics")
    return render(
        request,
        "hyperguild/costs.html",
        {
            **costs_report(only_person=None if everyone else request.user),
            "days": COSTS_DAYS,
            "warnings": budget_warnings(request.user),
            "everyone": everyone,
            # The service's budgets and the viewer's own; an operator sees every person's too.
            "budgets": budget_states(None if everyone else [request.user]),
        },
    )
