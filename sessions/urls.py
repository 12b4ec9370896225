from django.urls import path

from sessions.api import ClaudeEditHookView, ClaudeHookSpoolView, ClaudeHookView, SessionEntriesView

urlpatterns = [
    # Before the event route: "spool" is no hook event.
    path("api/hooks/spool", ClaudeHookSpoolView.as_view(), name="sessions-claude-hook-spool"),
    path("api/hooks/anchors", ClaudeEditHookView.as_view(), name="sessions-claude-edit-hook"),
    path("api/hooks/<str:event>", ClaudeHookView.as_view(), name="sessions-claude-hook"),
    path("sessions/<str:session_id>/entries", SessionEntriesView.as_view(), name="sessions-entries"),
]

# Browser UI (templates/sessions/): session list and timeline, training-data curation.
from sessions import views  # noqa: E402

urlpatterns += [
    path("sessions/", views.session_list, name="sessions-list"),
    path("sessions/<str:external_id>/", views.session_detail, name="sessions-detail"),
    path("activity/", views.activity, name="sessions-activity"),
    path("training/", views.training_list, name="sessions-training"),
    path("training/export/<str:kind>.jsonl", views.export_examples, name="sessions-training-export"),
    path("training/<int:pk>/", views.training_detail, name="sessions-training-detail"),
    path("training/<int:pk>/approve/", views.approve_example, name="sessions-training-approve"),
    path("training/<int:pk>/reject/", views.reject_example, name="sessions-training-reject"),
    path("training/<int:pk>/swap/", views.swap_example, name="sessions-training-swap"),
    path("training/<int:pk>/replay/", views.replay_example_now, name="sessions-training-replay"),
    path("training/<int:pk>/undo/<int:step>/", views.undo_example, name="sessions-training-undo"),
    path("training/<int:pk>/edit/", views.edit_example, name="sessions-training-edit"),
]
