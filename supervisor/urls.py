from django.urls import path

from supervisor.routing_api import RoutingStatsView

urlpatterns: list = [
    path("routing/stats", RoutingStatsView.as_view(), name="supervisor-routing-stats"),
]
