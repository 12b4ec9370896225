"""The reviewer's pages: the raw-note queue, one note, its actions, and search (a package, one module per capability).

Every change goes through `brain.actions` (promote, merge, reject); these
views only validate a form, fetch the note and call one action. The queue
and the note page read; all writes need the reviewer role, POST and CSRF
(`hyperguild.ui.role_action`; staff may too).
"""

from __future__ import annotations

from brain.views.bulk import (
    MAX_BULK_NOTES,
    BulkForm,
    bulk_review,
)
from brain.views.forms import (
    AGES,
    EXCERPT_CHARS,
    PAGE_SIZES,
    SORTS,
    DemoteForm,
    EditForm,
    MergeForm,
    PromoteForm,
    QueueFilterForm,
    RefileForm,
    RejectForm,
    VersionedForm,
)
from brain.views.pages import (
    BACKLINKS_LIMIT,
    FIELD_NAMES,
    GUIDELINES_SLUG,
    GUIDELINES_TEXT,
    HISTORY_LIMIT,
    QUEUE_FILTERS,
    REVIEW,
    NoteForms,
    combined_body,
    undo_tag,
)
from brain.views.recheck import (
    RECHECK_PAGE,
    archive_note,
    projects_page,
    promote_superseding,
    recheck_queue,
    still_true,
    supersede_note,
)
from brain.views.review import (
    demote_note,
    edit_note,
    merge_note,
    merge_preview,
    merge_render,
    note_detail,
    promote_note,
    refile_note,
    reject_note,
    reopen_note,
    review_queue,
    similar_panel,
    undo_change,
    write_guidelines,
)
from brain.views.search import (
    SearchForm,
    search_page,
)

__all__ = [
    "AGES",
    "BACKLINKS_LIMIT",
    "BulkForm",
    "DemoteForm",
    "EXCERPT_CHARS",
    "EditForm",
    "FIELD_NAMES",
    "GUIDELINES_SLUG",
    "GUIDELINES_TEXT",
    "HISTORY_LIMIT",
    "MAX_BULK_NOTES",
    "MergeForm",
    "NoteForms",
    "PAGE_SIZES",
    "PromoteForm",
    "QUEUE_FILTERS",
    "QueueFilterForm",
    "RECHECK_PAGE",
    "REVIEW",
    "RefileForm",
    "RejectForm",
    "SORTS",
    "SearchForm",
    "VersionedForm",
    "archive_note",
    "bulk_review",
    "combined_body",
    "demote_note",
    "edit_note",
    "merge_note",
    "merge_preview",
    "merge_render",
    "note_detail",
    "projects_page",
    "promote_note",
    "promote_superseding",
    "recheck_queue",
    "refile_note",
    "reject_note",
    "reopen_note",
    "review_queue",
    "search_page",
    "similar_panel",
    "still_true",
    "supersede_note",
    "undo_change",
    "undo_tag",
    "write_guidelines",
]
