from django.urls import path

from brain import views

urlpatterns: list = []

# Browser UI (templates/brain/): the review queue, a note, its actions, search.
urlpatterns += [
    path("review/", views.review_queue, name="brain-review"),
    path("review/bulk/", views.bulk_review, name="brain-review-bulk"),
    path("review/<int:pk>/", views.note_detail, name="brain-note"),
    path("review/<int:pk>/promote/", views.promote_note, name="brain-promote"),
    path("review/<int:pk>/reject/", views.reject_note, name="brain-reject"),
    path("review/<int:pk>/merge/preview/", views.merge_preview, name="brain-merge-preview"),
    path("review/<int:pk>/merge/", views.merge_note, name="brain-merge"),
    path("search/", views.search_page, name="brain-search"),
]
