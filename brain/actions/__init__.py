"""Every write to the brain: one transaction each, validation first (a package, one module per capability).

A bad input raises `BrainInputError` before anything is written. Each write
recomputes the content hash, rebuilds the note's outgoing links from its
`[[wikilinks]]` and frontmatter `related:`/`links:` lists, resolves links
that were waiting for its slug, bumps the corpus version (search indexes
rebuild on the next query) and, once committed, tells the search side
(`brain.indexing.note_changed`).
"""

from __future__ import annotations

from brain.actions.importing import (
    NoteFileArguments,
    NoteFileFields,
    SlugsTakenMeanwhile,
    do_forget_mirror_file,
    do_forget_note_hash,
    do_import_area_description,
    do_import_new_note_files,
    do_import_note_file,
    do_record_mirror_file,
    do_touch_mirror_file,
)
from brain.actions.index import (
    NOTE_CHANGE_KEEP_SECONDS,
    do_drop_archived_chunks,
    do_prune_note_changes,
    do_rechunk_note,
    do_store_embeddings,
    do_store_similar_notes,
)
from brain.actions.notes import (
    MAX_SLUG_ATTEMPTS,
    SLUG_REDACTED,
    RedactedFields,
    do_ingest_note,
    do_ingest_note_from,
    do_ingest_raw_note,
    do_write_raw_note,
    do_write_raw_note_from,
    link_targets,
    normalise_text,
)
from brain.actions.projects import (
    do_add_project,
    do_find_or_make_project,
    do_set_note_project,
)
from brain.actions.review import (
    EXPORTED_STATES,
    SUPERSEDES_KEY,
    do_archive_note,
    do_confirm_note,
    do_demote_note,
    do_edit_note,
    do_merge_note,
    do_promote_note,
    do_promote_superseding,
    do_refile_note,
    do_reject_note,
    do_reopen_note,
    do_supersede_note,
    do_undo_revision,
    merge_target_problem,
    successor_drafts,
)
from brain.actions.truth import (
    UPDATE_BATCH,
    RecheckOutcome,
    do_recheck_project,
    do_run_note_check,
    do_sync_project,
    do_verify_note,
)
from brain.errors import BrainInputError, NoteConflict

__all__ = [
    "BrainInputError",
    "EXPORTED_STATES",
    "MAX_SLUG_ATTEMPTS",
    "NOTE_CHANGE_KEEP_SECONDS",
    "NoteConflict",
    "NoteFileArguments",
    "NoteFileFields",
    "RecheckOutcome",
    "RedactedFields",
    "SLUG_REDACTED",
    "SUPERSEDES_KEY",
    "SlugsTakenMeanwhile",
    "UPDATE_BATCH",
    "do_add_project",
    "do_archive_note",
    "do_confirm_note",
    "do_demote_note",
    "do_drop_archived_chunks",
    "do_edit_note",
    "do_find_or_make_project",
    "do_forget_mirror_file",
    "do_forget_note_hash",
    "do_import_area_description",
    "do_import_new_note_files",
    "do_import_note_file",
    "do_ingest_note",
    "do_ingest_note_from",
    "do_ingest_raw_note",
    "do_merge_note",
    "do_promote_note",
    "do_promote_superseding",
    "do_prune_note_changes",
    "do_recheck_project",
    "do_rechunk_note",
    "do_record_mirror_file",
    "do_refile_note",
    "do_reject_note",
    "do_reopen_note",
    "do_run_note_check",
    "do_set_note_project",
    "do_store_embeddings",
    "do_store_similar_notes",
    "do_supersede_note",
    "do_sync_project",
    "do_touch_mirror_file",
    "do_undo_revision",
    "do_verify_note",
    "do_write_raw_note",
    "do_write_raw_note_from",
    "link_targets",
    "merge_target_problem",
    "normalise_text",
    "successor_drafts",
]
