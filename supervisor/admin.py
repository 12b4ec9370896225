from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django.contrib import admin
from django.db.models import Count, Model, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from hyperguild.admin_mixins import LogAdminMixin
from hyperguild.lib.redaction import redaction_summary
from supervisor.models import Pathway, RoutingEntry, SkillRun

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

# ModelAdmin is generic only in django-stubs: `admin.ModelAdmin[X]` fails at run time without django-stubs-ext's
# monkeypatch, which changes Django for the whole process (STYLE.md rule 14). The type checker sees the parameter.
if TYPE_CHECKING:
    SkillRunAdminBase = admin.ModelAdmin[SkillRun]
    RoutingEntryAdminBase = admin.ModelAdmin[RoutingEntry]
    PathwayAdminBase = admin.ModelAdmin[Pathway]
else:
    SkillRunAdminBase = RoutingEntryAdminBase = PathwayAdminBase = admin.ModelAdmin


@admin.register(SkillRun)
class SkillRunAdmin(LogAdminMixin[SkillRun], SkillRunAdminBase):
    """Read-only log of skill runs: what the worker claimed and what the supervisor found."""

    list_display = (
        "id",
        "skill",
        "endpoint",
        "status",
        "verified",
        "attempts",
        "model",
        "duration_ms",
        "session_id",
        "requested_by",
        "redacted",
        "created_at",
    )
    list_filter = ("status", "verified", "skill", "endpoint", "model")
    search_fields = ("id", "project_root", "session_id", "message", "skill", "task_id")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "skill",
                    "tool",
                    "endpoint",
                    "status",
                    "verified",
                    "message",
                    "progress",
                    "session_id",
                    "redacted",
                )
            },
        ),
        ("Apply", {"fields": ("apply_branch", "apply_gates")}),
        ("Change", {"fields": ("change_files", "change_tests", "change_diff", "change")}),
        ("Call", {"fields": ("project_root", "arguments", "model", "route", "task_id", "cancel_requested")}),
        ("Verification", {"fields": ("runner_output", "exit_code", "attempts", "attempt_log")}),
        ("Worker", {"fields": ("worker_report", "stdout", "stderr", "result")}),
        ("Timing", {"fields": ("created_at", "started_at", "finished_at", "duration_ms")}),
        ("Owner", {"fields": ("worker_host", "worker_pid", "worker_pgid", "worker_slot", "heartbeat_at")}),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [field.name for field in self.model._meta.fields] + [
            "redacted",
            "change_files",
            "change_tests",
            "change_diff",
            "apply_branch",
            "apply_gates",
        ]

    @admin.display(description="secrets redacted")
    def redacted(self, obj: SkillRun) -> str:
        return redaction_summary(obj.redactions or []) or "—"

    @admin.display(description="branch")
    def apply_branch(self, obj: SkillRun) -> str:
        result = obj.result if isinstance(obj.result, dict) else {}
        if obj.skill != "apply":
            return "—"
        if not result.get("branch"):
            return "none: nothing was applied"
        return format_html(
            "<code>{}</code> from <code>{}</code> ({} applied, {} refused)",
            result["branch"],
            str(result.get("base_commit") or "")[:12],
            result.get("applied", 0),
            result.get("refused", 0),
        )

    @admin.display(description="findings: outcome and gates")
    def apply_gates(self, obj: SkillRun) -> str:
        findings = (obj.result or {}).get("findings") if obj.skill == "apply" and isinstance(obj.result, dict) else None
        if not findings:
            return "—"
        return format_html_join(
            "\n",
            "<div>#{} <code>{}:{}</code> {}: <b>{}</b> {} <span style='color:#667085'>[{}]</span></div>",
            (
                (
                    f.get("index"),
                    f.get("file"),
                    f.get("line"),
                    f.get("title"),
                    "applied" if f.get("outcome") == "applied" else f"refused ({f.get('gate')})",
                    str(f.get("commit") or "")[:12] or f.get("reason", ""),
                    ", ".join(f"{g['gate']} {'ok' if g['passed'] else 'FAILED'}" for g in f.get("gates") or []),
                )
                for f in findings
            ),
        )

    @admin.display(description="files changed")
    def change_files(self, obj: SkillRun) -> str:
        files = (obj.change or {}).get("files") or []
        if not files:
            return "—"
        return format_html_join(
            ", ", "{} ({}{})", ((f["path"], f["status"], ", binary" if f.get("binary") else "") for f in files)
        )

    @admin.display(description="tests before → after")
    def change_tests(self, obj: SkillRun) -> str:
        change = obj.change or {}
        if not change.get("test_cmd"):
            return "—"
        before, after = change.get("before") or {}, change.get("after") or {}
        return f"{change['test_cmd']}: exit {before.get('exit_code', '—')} before → {after.get('exit_code', '—')} after"

    @admin.display(description="unified diff")
    def change_diff(self, obj: SkillRun) -> str:
        diff = (obj.change or {}).get("diff")
        if not diff:
            return "—"
        return format_html('<pre style="white-space:pre;overflow-x:auto;max-height:40rem">{}</pre>', diff)


@admin.register(RoutingEntry)
class RoutingEntryAdmin(LogAdminMixin[RoutingEntry], RoutingEntryAdminBase):
    """Read-only log of routing decisions: which model, why, and how the call ended."""

    list_display = (
        "id",
        "skill",
        "model",
        "reason",
        "pass_rate_seen",
        "samples_seen",
        "status",
        "is_final",
        "latency_ms",
        "pathway",
        "session_id",
        "requested_by",
        "created_at",
    )
    list_filter = ("skill", "model", "reason", "status", "is_final")
    search_fields = ("skill", "model", "session_id", "error", "pathway__key")
    list_select_related = ("attempt_of", "pathway")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)


class DecidedCount(TypedDict):
    """What PathwayAdmin.get_queryset annotates each pathway with."""

    decided_count: int


@admin.register(Pathway)
class PathwayAdmin(LogAdminMixin[Pathway], PathwayAdminBase):
    """Read-only routing memory: which model worked where, its probation, promotion or retirement."""

    list_display = (
        "key",
        "state",
        "recommended_model",
        "replays",
        "successes",
        "success_rate",
        "decided",
        "updated_at",
    )
    list_filter = ("state", "skill", "signal", "recommended_model")
    search_fields = ("key", "area", "recommended_model")
    ordering = ("-updated_at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Pathway]:
        return (
            super()
            .get_queryset(request)
            .annotate(decided_count=Count("entries", filter=Q(entries__reason=RoutingEntry.Reason.PATHWAY)))
        )

    @admin.display(description="calls decided", ordering="decided_count")
    def decided(self, obj: WithAnnotations[Pathway, DecidedCount]) -> int:
        return obj.decided_count

    @admin.display(description="success rate")
    def success_rate(self, obj: Pathway) -> str:
        rate = obj.success_rate
        return "—" if rate is None else f"{rate:.0%}"
