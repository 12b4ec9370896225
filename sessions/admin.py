"""Admin for operators: sessions and their (read-only) logs, retrospectives, training curation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse

from hyperguild.admin_mixins import ReadOnlyAdminMixin
from hyperguild.lib.typed import AuthenticatedHttpRequest
from sessions.actions import FlaggedExample, do_approve_example, do_reject_example, do_swap_dpo
from sessions.models import AgentSession, RetrospectiveRun, SessionEntry, TrainingExample

# ModelAdmin and the inlines are generic only in django-stubs: `admin.ModelAdmin[X]` fails at run time without
# django-stubs-ext's monkeypatch, which changes Django for the whole process (STYLE.md rule 14). The type checker
# sees the parameters; Django gets the plain classes.
if TYPE_CHECKING:
    SessionEntryInlineBase = admin.TabularInline[SessionEntry, AgentSession]
    AgentSessionAdminBase = admin.ModelAdmin[AgentSession]
    SessionEntryAdminBase = admin.ModelAdmin[SessionEntry]
    RetrospectiveRunAdminBase = admin.ModelAdmin[RetrospectiveRun]
    TrainingExampleAdminBase = admin.ModelAdmin[TrainingExample]
else:
    SessionEntryInlineBase = admin.TabularInline
    AgentSessionAdminBase = SessionEntryAdminBase = RetrospectiveRunAdminBase = TrainingExampleAdminBase = (
        admin.ModelAdmin
    )

ENTRY_FIELDS = (
    "seq",
    "kind",
    "skill",
    "phase",
    "status",
    "message",
    "data",
    "redactions",
    "idempotency_key",
    "source",
    "occurred_at",
    "created_at",
)


class SessionEntryInline(ReadOnlyAdminMixin, SessionEntryInlineBase):
    model = SessionEntry
    fields = ENTRY_FIELDS
    readonly_fields = ENTRY_FIELDS
    extra = 0
    show_change_link = True
    ordering = ["seq"]


@admin.register(AgentSession)
class AgentSessionAdmin(AgentSessionAdminBase):
    list_display = ("external_id", "project", "started_by", "last_seq", "created_at", "updated_at")
    search_fields = ("external_id", "project__name", "project_root")
    list_select_related = ("project", "started_by")
    list_filter = ("project",)
    readonly_fields = (
        "external_id",
        "project",
        "project_root",
        "client",
        "started_by",
        "last_seq",
        "file_layout",
        "created_at",
        "updated_at",
    )
    inlines = [SessionEntryInline]

    def view_on_site(self, obj: AgentSession) -> str:
        return reverse("sessions-detail", args=[obj.external_id])  # the timeline page

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions start with their first session_log call


@admin.register(SessionEntry)
class SessionEntryAdmin(ReadOnlyAdminMixin, SessionEntryAdminBase):
    list_display = ("session", "seq", "kind", "skill", "phase", "status", "short_message", "logged_by", "created_at")
    list_filter = ("kind", "status", "source", "skill")
    search_fields = ("session__external_id", "message", "idempotency_key")
    list_select_related = ("session",)
    readonly_fields = ("session", *ENTRY_FIELDS, "raw_line")
    ordering = ("-created_at",)

    @admin.display(description="message")
    def short_message(self, obj: SessionEntry) -> str:
        return obj.message[:80]


@admin.register(RetrospectiveRun)
class RetrospectiveRunAdmin(ReadOnlyAdminMixin, RetrospectiveRunAdminBase):
    list_display = ("session", "method", "model", "status", "requested_by", "created_at")
    list_filter = ("method", "status")
    search_fields = ("session__external_id", "requested_by__username")
    list_select_related = ("session", "requested_by")
    readonly_fields = (
        "session",
        "method",
        "model",
        "status",
        "requested_by",
        "message",
        "learnings",
        "notes_written",
        "redactions",
        "created_at",
    )


@admin.register(TrainingExample)
class TrainingExampleAdmin(TrainingExampleAdminBase):
    list_display = ("id", "kind", "skill", "status", "flagged", "replay_status", "reviewer", "created_at")
    list_filter = ("kind", "status", "flagged", "replay_status", "skill")
    search_fields = ("source_key", "skill", "review_note")
    list_select_related = ("reviewer",)
    readonly_fields = (
        "kind",
        "skill",
        "prompt",
        "completion",
        "chosen",
        "rejected",
        "provenance",
        "status",
        "reviewer",
        "reviewed_at",
        "review_note",
        "edits",
        "flagged",
        "flags",
        "replay_status",
        "replay",
        "source_key",
        "created_at",
        "updated_at",
    )
    actions = ["approve", "reject", "swap"]

    def view_on_site(self, obj: TrainingExample) -> str:
        return reverse("sessions-training-detail", args=[obj.pk])  # the curation page

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # examples come from the trainer; edit them in the curation UI (kept in edit history)

    @admin.action(description="Approve selected examples (flagged ones are left for the curation page)")
    def approve(self, request: AuthenticatedHttpRequest, queryset: QuerySet[TrainingExample]) -> None:
        done, flagged = 0, []
        for example in queryset:
            try:
                do_approve_example(example, reviewer=request.user)
                done += 1
            except FlaggedExample:
                flagged.append(f"#{example.pk}")
        self.message_user(request, f"Approved {done} example(s).", messages.SUCCESS)
        if flagged:
            self.message_user(
                request,
                (
                    f"Not approved, flagged for a possible secret: {', '.join(flagged)}. Check each on its curation page."
                ),
                messages.WARNING,
            )

    @admin.action(description="Reject selected examples")
    def reject(self, request: AuthenticatedHttpRequest, queryset: QuerySet[TrainingExample]) -> None:
        for example in queryset:
            do_reject_example(example, reviewer=request.user, reason="rejected in bulk from the admin")
        self.message_user(request, f"Rejected {queryset.count()} example(s).", messages.SUCCESS)

    @admin.action(description="Swap chosen and rejected of selected DPO pairs")
    def swap(self, request: AuthenticatedHttpRequest, queryset: QuerySet[TrainingExample]) -> None:
        pairs = list(queryset.filter(kind=TrainingExample.Kind.DPO))
        for example in pairs:
            do_swap_dpo(example, reviewer=request.user)
        self.message_user(request, f"Swapped {len(pairs)} DPO pair(s).", messages.SUCCESS)
