from django.urls import path

from sessions.api import SessionEntriesView

urlpatterns = [
    path("sessions/<str:session_id>/entries", SessionEntriesView.as_view(), name="sessions-entries"),
]
