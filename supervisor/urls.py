from django.urls import URLPattern, URLResolver, path

from supervisor import views
from supervisor.routing_api import RoutingStatsView

urlpatterns: list[URLPattern | URLResolver] = [
    path("routing/stats", RoutingStatsView.as_view(), name="supervisor-routing-stats"),
]

# Browser UI (templates/supervisor/): the routing dashboard and a skill run's page. /routing/stats stays the JSON view.
urlpatterns += [
    path("routing/", views.routing_dashboard, name="supervisor-routing"),
    path("routing/stats.json", views.routing_stats_json, name="supervisor-routing-stats-json"),
    path("runs/<int:pk>/", views.run_detail, name="supervisor-run"),
]
