"""GET /routing/stats: how the router has been doing (read-only, routing token)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta

from django.utils import timezone
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from hyperguild.api import EndpointTokenAPIView
from supervisor.routing import routing_settings, routing_stats

MAX_WINDOW_HOURS = 24 * 366


class StatsQuery(serializers.Serializer):
    window = serializers.FloatField(
        required=False,
        default=24.0,
        min_value=0.01,
        max_value=MAX_WINDOW_HOURS,
        help_text="hours to look back (default 24)",
    )


class RoutingStatsView(EndpointTokenAPIView):
    """Per-skill pass rates, call counts per model, the fast model's share of calls."""

    token_endpoint = "routing"

    def get(self, request: Request) -> Response:
        query = StatsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        hours = query.validated_data["window"]
        now = timezone.now()
        since = now - timedelta(hours=hours)
        return Response(
            {
                "window_hours": hours,
                "since": since.isoformat(),
                "until": now.isoformat(),
                **asdict(routing_stats(since)),
                "settings": routing_settings(),
            }
        )
