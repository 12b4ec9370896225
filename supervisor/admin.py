from django.contrib import admin

from supervisor.models import RoutingEntry, SkillRun


@admin.register(SkillRun)
class SkillRunAdmin(admin.ModelAdmin):
    """Read-only log of skill runs: what the worker claimed and what the supervisor found."""

    list_display = ("id", "skill", "endpoint", "status", "verified", "attempts", "model", "duration_ms", "session_id", "created_at")
    list_filter = ("status", "verified", "skill", "endpoint", "model")
    search_fields = ("id", "project_root", "session_id", "message", "skill")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fieldsets = (
        (None, {"fields": ("skill", "tool", "endpoint", "status", "verified", "message", "progress", "session_id")}),
        ("Call", {"fields": ("project_root", "arguments", "model", "route", "cancel_requested")}),
        ("Verification", {"fields": ("runner_output", "exit_code", "attempts", "attempt_log")}),
        ("Worker", {"fields": ("worker_report", "stdout", "stderr", "result")}),
        ("Timing", {"fields": ("created_at", "started_at", "finished_at", "duration_ms")}),
        ("Owner", {"fields": ("worker_host", "worker_pid", "worker_pgid", "worker_slot", "heartbeat_at")}),
    )

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser


@admin.register(RoutingEntry)
class RoutingEntryAdmin(admin.ModelAdmin):
    """Read-only log of routing decisions: which model, why, and how the call ended."""

    list_display = ("id", "skill", "model", "reason", "pass_rate_seen", "samples_seen", "status", "is_final", "latency_ms", "session_id", "created_at")
    list_filter = ("skill", "model", "reason", "status", "is_final")
    search_fields = ("skill", "model", "session_id", "error")
    list_select_related = ("attempt_of",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser
