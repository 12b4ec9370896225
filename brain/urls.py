from django.urls import URLPattern, URLResolver, path

from brain import api, embedding_api, views

# REST (DRF, the /mcp/brain bearer token): see brain/api.py.
urlpatterns: list[URLPattern | URLResolver] = [
    path("query", api.QueryView.as_view(), name="brain-api-query"),
    path("write", api.WriteView.as_view(), name="brain-api-write"),
    path("ingest", api.IngestView.as_view(), name="brain-api-ingest"),
    path("notes/<path:slug>", api.NoteView.as_view(), name="brain-api-note"),
    path("backfill-embeddings", embedding_api.BackfillEmbeddingsView.as_view(), name="brain-api-backfill-embeddings"),
]

# Browser UI (templates/brain/): the review queue, a note, its actions, search.
urlpatterns += [
    path("review/", views.review_queue, name="brain-review"),
    path("review/bulk/", views.bulk_review, name="brain-review-bulk"),
    path("review/guidelines/", views.write_guidelines, name="brain-guidelines"),
    path("review/<int:pk>/", views.note_detail, name="brain-note"),
    path("review/<int:pk>/similar/", views.similar_panel, name="brain-similar"),
    path("review/<int:pk>/promote/", views.promote_note, name="brain-promote"),
    path("review/<int:pk>/reject/", views.reject_note, name="brain-reject"),
    path("review/<int:pk>/merge/preview/", views.merge_preview, name="brain-merge-preview"),
    path("review/<int:pk>/merge/", views.merge_note, name="brain-merge"),
    path("review/<int:pk>/merge/render/", views.merge_render, name="brain-merge-render"),
    path("review/<int:pk>/edit/", views.edit_note, name="brain-edit"),
    path("review/<int:pk>/refile/", views.refile_note, name="brain-refile"),
    path("review/<int:pk>/demote/", views.demote_note, name="brain-demote"),
    path("review/<int:pk>/reopen/", views.reopen_note, name="brain-reopen"),
    path("review/undo/<uuid:group>/", views.undo_change, name="brain-undo"),
    path("review/recheck/", views.recheck_queue, name="brain-recheck"),
    path("review/projects/", views.projects_page, name="brain-projects"),
    path("review/<int:pk>/still-true/", views.still_true, name="brain-still-true"),
    path("review/<int:pk>/supersede/", views.supersede_note, name="brain-supersede"),
    path("review/<int:pk>/supersedes/", views.promote_superseding, name="brain-promote-superseding"),
    path("review/<int:pk>/archive/", views.archive_note, name="brain-archive"),
    path("search/", views.search_page, name="brain-search"),
]
