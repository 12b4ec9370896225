from django.urls import path

from ledger import views

urlpatterns = [
    path("costs/", views.costs, name="hyperguild-costs"),
]
