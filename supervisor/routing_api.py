"""GET /routing/stats: how the router has been doing (read-only, routing token)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from hyperguild.mcp.registry import get_endpoint
from hyperguild.mcp.views import BearerTokenAuthentication, HasClient
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


class RoutingStatsView(APIView):
    """Per-skill pass rates, call counts per model, the fast model's share of calls."""

    permission_classes = [HasClient]

    def get_authenticators(self):
        return [BearerTokenAuthentication(get_endpoint("routing"))]

    def get(self, request):
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
                **routing_stats(since),
                "settings": routing_settings(),
            }
        )
