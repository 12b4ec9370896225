"""Admin for operators: notes and links, with bulk review actions that call the brain actions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.urls import reverse

from brain.actions import (
    do_archive_note,
    do_promote_note,
    do_reject_note,
    do_sync_project,
    do_undo_revision,
    do_verify_note,
)
from brain.errors import BrainInputError
from brain.indexing import notes_changed_in_bulk
from brain.models import (
    Anchor,
    AreaDescription,
    BrainVersion,
    Embedding,
    MirrorFile,
    Note,
    NoteChange,
    NoteCheckRun,
    NoteChunk,
    NoteLink,
    NoteRevision,
    NoteStatus,
    PassageVector,
    Project,
    SimilarNotes,
)
from hyperguild.admin_mixins import ModelAdmin, ReadOnlyAdminMixin, TabularInline

if TYPE_CHECKING:
    from brain.types import SignedInRequest  # the admin is behind staff sign-in


class LinkOutInline(TabularInline[NoteLink, Note]):
    model = NoteLink
    fk_name = "source"
    fields = ("target_slug", "kind", "target")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class AnchorInline(TabularInline[Anchor, Note]):
    model = Anchor
    fields = ("kind", "value", "hint", "explicit", "state", "location", "commit", "checked_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Anchor)
class AnchorAdmin(ReadOnlyAdminMixin, ModelAdmin[Anchor]):
    """Every note's anchors and their last check (written by brain.truth's checks only)."""

    list_display = ("note", "kind", "value", "state", "path", "location", "commit", "checked_at")
    list_filter = ("kind", "state", "explicit")
    search_fields = ("value", "path", "note__slug")
    list_select_related = ("note",)


@admin.register(NoteCheckRun)
class NoteCheckRunAdmin(ReadOnlyAdminMixin, ModelAdmin[NoteCheckRun]):
    """Every run of a note's `check:` (brain.checks): at which commit, how it ended, what it cost."""

    list_display = ("note", "commit", "passed", "exit_code", "outcome", "seconds", "ran_at")
    list_filter = ("passed", "outcome")
    search_fields = ("note__slug", "command", "commit")
    list_select_related = ("note",)


@admin.register(Project)
class ProjectAdmin(ModelAdmin[Project]):
    """Projects (docs/truth.md). Add them with `manage.py project add`; here an operator edits folders and syncs."""

    list_display = ("name", "repo", "branch", "last_synced_commit", "synced_at", "sync_error")
    search_fields = ("name", "repo")
    readonly_fields = ("last_synced_commit", "synced_at", "sync_error", "created_at")
    actions = ["sync_projects"]

    @admin.action(description="Sync with the repository and re-verify changed notes")
    def sync_projects(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        for project in queryset:
            outcome = do_sync_project(project)
            if outcome.error:
                self.message_user(request, f"{project.name}: {outcome.error}", messages.WARNING)
            else:
                self.message_user(
                    request, f"{project.name}: {outcome.notes_rechecked} notes re-checked, {len(outcome.stale)} stale"
                )


@admin.register(Note)
class NoteAdmin(ModelAdmin[Note]):
    list_display = (
        "slug",
        "title",
        "status",
        "wing",
        "hall",
        "project",
        "verification_state",
        "source",
        "created_by",
        "reviewed_by",
        "updated_at",
    )
    list_filter = (
        "status",
        "verification_state",
        "project",
        "wing",
        "hall",
        "source",
        ("created_by", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("slug", "title", "body", "session_id", "created_by__username")
    list_select_related = ("reviewed_by", "created_by", "project")
    date_hierarchy = "created_at"
    # Writes go through the actions (hash, links, search version); the admin only reads fields.
    readonly_fields = (
        "slug",
        "title",
        "body",
        "frontmatter",
        "status",
        "wing",
        "hall",
        "path",
        "content_hash",
        "provenance",
        "source",
        "session_id",
        "created_by",
        "reviewed_by",
        "reviewed_at",
        "review_note",
        "created_at",
        "updated_at",
        "verification_state",
        "verified_commit",
        "verification_evidence",
        "verified_at",
        "waived_anchors",
        "superseded_by",
        "superseded_at",
        "superseded_by_person",
        "superseded_reason",
    )
    inlines = [LinkOutInline, AnchorInline]
    actions = ["promote_notes", "reject_notes", "archive_notes", "verify_notes"]

    @admin.action(description="Re-check anchors against the project's head")
    def verify_notes(self, request: HttpRequest, queryset: QuerySet[Note]) -> None:
        for note in queryset:
            do_verify_note(note)
        self.message_user(request, f"{queryset.count()} notes re-checked")

    def view_on_site(self, obj: Note) -> str:
        return reverse("brain-note", args=[obj.pk])  # the review UI's page for the note

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False  # notes are archived, never deleted

    @admin.action(description="Promote selected raw notes into the wiki (needs a wing in the note or its frontmatter)")
    @notes_changed_in_bulk()  # the notes' background work queued in batches, not once per note
    def promote_notes(self, request: SignedInRequest, queryset: QuerySet[Note]) -> None:
        done, problems = 0, []
        for note in queryset.filter(status=NoteStatus.RAW):
            wing = note.wing or str(note.frontmatter.get("wing", ""))
            hall = note.hall or str(note.frontmatter.get("hall", ""))
            try:
                do_promote_note(note, reviewer=request.user, wing=wing, hall=hall)
                done += 1
            except BrainInputError as exc:
                problems.append(f"{note.slug}: {exc.message}")
        self._report(request, f"Promoted {done} note(s).", problems)

    @admin.action(description="Reject selected raw notes")
    @notes_changed_in_bulk()  # the notes' background work queued in batches, not once per note
    def reject_notes(self, request: SignedInRequest, queryset: QuerySet[Note]) -> None:
        done, problems = 0, []
        for note in queryset.filter(status=NoteStatus.RAW):
            try:
                do_reject_note(note, reviewer=request.user, reason=f"rejected in bulk from the admin by {request.user}")
                done += 1
            except BrainInputError as exc:
                problems.append(f"{note.slug}: {exc.message}")
        self._report(request, f"Rejected {done} note(s).", problems)

    @admin.action(description="Archive selected notes")
    @notes_changed_in_bulk()  # the notes' background work queued in batches, not once per note
    def archive_notes(self, request: SignedInRequest, queryset: QuerySet[Note]) -> None:
        done = 0
        for note in queryset.exclude(status=NoteStatus.ARCHIVED):
            do_archive_note(note, user=request.user, reason=f"archived from the admin by {request.user}")
            done += 1
        self._report(request, f"Archived {done} note(s).", [])

    def _report(self, request: HttpRequest, summary: str, problems: list[str]) -> None:
        self.message_user(request, summary, messages.SUCCESS)
        for problem in problems:
            self.message_user(request, problem, messages.WARNING)


@admin.register(NoteLink)
class NoteLinkAdmin(ModelAdmin[NoteLink]):
    list_display = ("source", "target_slug", "kind", "target")
    list_filter = ("kind", ("target", admin.EmptyFieldListFilter))
    search_fields = ("source__slug", "target_slug")
    list_select_related = ("source", "target")
    readonly_fields = ("source", "target_slug", "target", "kind")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(NoteRevision)
class NoteRevisionAdmin(ReadOnlyAdminMixin, ModelAdmin[NoteRevision]):
    """Every reviewer change, read-only; undo goes through the same action as the UI."""

    list_display = ("note", "action", "user", "created_at", "version_before", "version_after", "undone_at")
    list_filter = ("action", ("undone_at", admin.EmptyFieldListFilter))
    search_fields = ("note__slug", "summary", "group")
    list_select_related = ("note", "user")
    readonly_fields = (
        "note",
        "group",
        "action",
        "user",
        "created_at",
        "before",
        "after",
        "version_before",
        "version_after",
        "summary",
        "undone_at",
        "undone_by",
        "undoes",
    )
    actions = ["undo_revisions"]

    @admin.action(description="Undo the selected changes (their whole action)")
    def undo_revisions(self, request: SignedInRequest, queryset: QuerySet[NoteRevision]) -> None:
        groups = list(dict.fromkeys(queryset.order_by("-id").values_list("group", flat=True)))
        done = 0
        for group in groups:
            try:
                do_undo_revision(group, user=request.user)
                done += 1
            except BrainInputError as exc:
                self.message_user(request, f"{group}: {exc.message}", messages.WARNING)
        self.message_user(request, f"Undid {done} change(s).", messages.SUCCESS)


@admin.register(MirrorFile)
class MirrorFileAdmin(ModelAdmin[MirrorFile]):
    list_display = ("path", "note", "synced_at")
    search_fields = ("path", "note__slug")
    list_select_related = ("note",)
    readonly_fields = ("path", "note", "disk_hash", "note_hash", "mtime_ns", "size", "synced_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


# -- search internals: read-only, for operators checking what is indexed ----------------


@admin.register(NoteChunk)
class NoteChunkAdmin(ModelAdmin[NoteChunk]):
    list_display = ("note", "ordinal", "heading_path", "content_hash")
    search_fields = ("note__slug", "heading_path", "content_hash")
    list_select_related = ("note",)
    readonly_fields = ("note", "ordinal", "heading_path", "text", "content_hash", "source_hash")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Embedding)
class EmbeddingAdmin(ModelAdmin[Embedding]):
    list_display = ("chunk", "model", "dimensions", "created_at")
    list_filter = ("model", "dimensions")
    search_fields = ("chunk__note__slug", "model", "content_hash")
    list_select_related = ("chunk", "chunk__note")
    exclude = ("vector",)  # hundreds of floats help nobody on a form
    readonly_fields = ("chunk", "model", "dimensions", "content_hash", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(PassageVector)
class PassageVectorAdmin(ModelAdmin[PassageVector]):
    """What the passage reader has read (brain.passage_reader): a digest and when; the vector is bytes."""

    list_display = ("digest", "created_at")
    list_filter = ("created_at",)
    search_fields = ("digest",)
    exclude = ("vector",)
    readonly_fields = ("digest", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(BrainVersion)
class BrainVersionAdmin(ReadOnlyAdminMixin, ModelAdmin[BrainVersion]):
    list_display = ("id", "version", "corpus_id")
    readonly_fields = ("id", "version", "corpus_id")


@admin.register(NoteChange)
class NoteChangeAdmin(ReadOnlyAdminMixin, ModelAdmin[NoteChange]):
    """The search index's change log (read-only): which note changed at which corpus version."""

    list_display = ("version", "note_id", "created_at")
    search_fields = ("=note_id", "=version")
    list_filter = ("created_at",)
    ordering = ("-version",)


@admin.register(AreaDescription)
class AreaDescriptionAdmin(ModelAdmin[AreaDescription]):
    """Wing and hall descriptions from `_index.md`: edited on disk (the mirror picks them up), read-only here."""

    list_display = ("__str__", "title", "path", "updated_at")
    list_filter = ("wing",)
    search_fields = ("wing", "hall", "title", "body")
    readonly_fields = ("wing", "hall", "title", "body", "frontmatter", "path", "content_hash", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(SimilarNotes)
class SimilarNotesAdmin(ReadOnlyAdminMixin, ModelAdmin[SimilarNotes]):
    """The review pages' stored similar-notes rankings (read-only; `brain.similar` writes them)."""

    list_display = ("note", "computed_at")
    list_select_related = ("note",)
    search_fields = ("note__slug", "note__title")
    list_filter = ("computed_at",)
