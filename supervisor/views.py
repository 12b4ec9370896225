"""The routing dashboard: pass rate per skill over time, calls per model, the latest decisions.

The chart is an SVG drawn on the server (no chart library, works offline);
`pass_rate_chart` turns bucketed counts into polylines. The chart's pass rate
is measured the way the router measures it: on first attempts the router chose
itself (`RoutingEntry.objects.router_choices()`). Every other figure comes from
`RoutingEntryQuerySet.figures()`, the same definitions /routing/stats serves.
The pathways table shows the routing memory: each pathway's state, its
recommended model, replays and successes, how many calls it decided, and the
bug fingerprints grounded findings left there.

`run_detail` is one skill run's page: for `apply`, the branch it left and every
finding's gates in order; for a review, its grounded and dropped findings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max, Min, Q
from django.db.models.functions import TruncDay, TruncHour
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from ledger.costs import spend_of
from supervisor.models import ModelFigures, PassRateBucket, Pathway, RoutingEntry, SkillRun
from supervisor.routing import routing_settings, routing_stats

WINDOW_CHOICES = (1, 7, 30, 90)
DEFAULT_WINDOW_DAYS = 30
LATEST_DECISIONS = 30
PATHWAYS_SHOWN = 50
HOURLY_BELOW = timedelta(hours=48)  # shorter spans are bucketed by hour, longer by day
CHART_WIDTH, CHART_HEIGHT = 1000, 280
CHART_PAD_LEFT, CHART_PAD_RIGHT, CHART_PAD_TOP, CHART_PAD_BOTTOM = 44, 36, 12, 28
MAX_X_LABELS = 8
PALETTE = ("#3056d3", "#127a3e", "#b42318", "#8a5a00", "#7a3ec8", "#0e7490", "#c2410c", "#4d7c0f")


@dataclass
class Series:
    skill: str
    color: str
    points: list[tuple[float, float, datetime, float, int]] = field(default_factory=list)  # x, y, when, rate, n

    @property
    def polyline(self) -> str:
        return " ".join(f"{x:.1f},{y:.1f}" for x, y, *_ in self.points)


@dataclass(frozen=True)
class YTick:
    y: float
    label: str  # "50%"


@dataclass(frozen=True)
class XTick:
    x: float
    label: datetime  # the bucket


@dataclass(frozen=True)
class ModelRow:
    """A row of the dashboard's "Calls per model" table: the model's figures and its share of all attempts."""

    model: str
    figures: ModelFigures
    share: float


@dataclass(frozen=True)
class PassRateChart:
    """The routing page's chart: one polyline per skill, the axes' ticks and the floor and ceiling lines."""

    series: list[Series]
    width: int
    height: int
    y_ticks: list[YTick]
    x_ticks: list[XTick]
    left: int
    right: int
    top: int
    bottom: int
    floor_y: float
    ceil_y: float


def pass_rate_chart(rows: list[PassRateBucket], start: datetime, end: datetime) -> PassRateChart:
    """Passes per skill and bucket → series with SVG coordinates, plus the axes."""
    inner_w = CHART_WIDTH - CHART_PAD_LEFT - CHART_PAD_RIGHT
    inner_h = CHART_HEIGHT - CHART_PAD_TOP - CHART_PAD_BOTTOM
    span = max((end - start).total_seconds(), 1.0)

    def x_of(moment: datetime) -> float:
        return CHART_PAD_LEFT + inner_w * min(max((moment - start).total_seconds() / span, 0.0), 1.0)

    def y_of(rate: float) -> float:
        return CHART_PAD_TOP + inner_h * (1.0 - rate)

    series: dict[str, Series] = {}
    for row in sorted(rows, key=lambda r: (r.skill, r.bucket)):
        if row.skill not in series:
            series[row.skill] = Series(row.skill, PALETTE[len(series) % len(PALETTE)])
        rate = row.passed / row.total if row.total else 0.0
        series[row.skill].points.append((x_of(row.bucket), y_of(rate), row.bucket, rate, row.total))
    y_ticks = [YTick(y_of(v), f"{int(v * 100)}%") for v in (0.0, 0.25, 0.5, 0.75, 1.0)]
    buckets = sorted({row.bucket for row in rows})
    step = max(1, -(-len(buckets) // MAX_X_LABELS))  # ceil: at most MAX_X_LABELS labels
    x_ticks = [XTick(x_of(moment), moment) for moment in buckets[::step]]
    return PassRateChart(
        series=list(series.values()),
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        y_ticks=y_ticks,
        x_ticks=x_ticks,
        left=CHART_PAD_LEFT,
        right=CHART_WIDTH - CHART_PAD_RIGHT,
        top=CHART_PAD_TOP,
        bottom=CHART_HEIGHT - CHART_PAD_BOTTOM,
        floor_y=y_of(settings.HYPERGUILD_ROUTE_LOCAL_FLOOR),
        ceil_y=y_of(settings.HYPERGUILD_ROUTE_LOCAL_CEIL),
    )


@login_required
def routing_dashboard(request: HttpRequest) -> HttpResponse:
    try:
        days = int(request.GET.get("days", DEFAULT_WINDOW_DAYS))
    except ValueError:
        days = DEFAULT_WINDOW_DAYS
    if days not in WINDOW_CHOICES:
        days = DEFAULT_WINDOW_DAYS
    now = timezone.now()
    window = RoutingEntry.objects.since(now - timedelta(days=days))
    choices = window.router_choices()

    span = choices.aggregate(first=Min("created_at"), last=Max("created_at"))
    start, end = span["first"] or now - timedelta(days=days), span["last"] or now
    trunc = TruncHour if end - start < HOURLY_BELOW else TruncDay
    rows = window.router_pass_rate_buckets(trunc)
    if rows:
        start = min(row.bucket for row in rows)
        end = max(
            max(row.bucket for row in rows),
            start + (timedelta(hours=1) if trunc is TruncHour else timedelta(days=1)),
        )

    figures = window.figures(settings.HYPERGUILD_FAST_MODEL)
    per_skill = sorted(figures.skills.items())
    per_model = [
        ModelRow(name, row, row.attempts / figures.attempts if figures.attempts else 0.0)
        for name, row in figures.models.items()
    ]
    latest = list(window.select_related("attempt_of").order_by("-created_at", "-id")[:LATEST_DECISIONS])
    pathways = list(
        Pathway.objects.annotate(
            decided=Count("entries", filter=Q(entries__reason=RoutingEntry.Reason.PATHWAY))
        ).order_by("-updated_at")[:PATHWAYS_SHOWN]
    )
    return render(
        request,
        "supervisor/routing.html",
        {
            "days": days,
            "window_choices": WINDOW_CHOICES,
            "hourly": trunc is TruncHour,
            "chart": pass_rate_chart(rows, start, end),
            "per_skill": per_skill,
            "per_model": per_model,
            "figures": figures,
            "fast_model": settings.HYPERGUILD_FAST_MODEL,
            "thinking_model": settings.HYPERGUILD_THINKING_MODEL,
            "latest": latest,
            "pathways": pathways,
            "probation": settings.HYPERGUILD_PATHWAY_PROBATION,
            "min_success": settings.HYPERGUILD_PATHWAY_MIN_SUCCESS,
            "floor": settings.HYPERGUILD_ROUTE_LOCAL_FLOOR,
            "ceil": settings.HYPERGUILD_ROUTE_LOCAL_CEIL,
        },
    )


@login_required
def routing_stats_json(request: HttpRequest) -> JsonResponse:
    """The `/routing/stats` figures for a logged-in browser (the JSON button), without the routing token."""
    try:
        hours = float(request.GET.get("window", 24))
    except ValueError:
        return JsonResponse({"error": "window must be a number of hours, e.g. 24"}, status=400)
    if not 0.01 <= hours <= 24 * 366:
        return JsonResponse({"error": "window must be between 0.01 and 8784 hours"}, status=400)
    now = timezone.now()
    since = now - timedelta(hours=hours)
    return JsonResponse(
        {
            "window_hours": hours,
            "since": since.isoformat(),
            "until": now.isoformat(),
            **asdict(routing_stats(since)),
            "settings": routing_settings(),
        }
    )


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One skill run: its verdict, and for `apply` the branch and each finding's gate results."""
    run = get_object_or_404(SkillRun, pk=pk)
    result = run.result if isinstance(run.result, dict) else {}
    source_id = result.get("source_run_id")
    source = SkillRun.objects.filter(pk=source_id).only("pk", "skill").first() if isinstance(source_id, int) else None
    return render(
        request,
        "supervisor/run_detail.html",
        {
            "run": run,
            "result": result,
            "source": source,
            "cost": spend_of(run.model_calls.all()),
        },
    )
