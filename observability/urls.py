from django.urls import path

from observability import metrics, views

urlpatterns = [
    path("health", views.health, name="health"),
    path("health/live", views.live, name="health-live"),
    path("metrics", metrics.metrics_view, name="metrics"),
]
