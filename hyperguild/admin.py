"""Admin for the service's own records: the worker's heartbeat and the MCP engine's cancellations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from hyperguild.models import McpCancellation, WorkerHeartbeat

if TYPE_CHECKING:
    # ModelAdmin is generic only in django-stubs; at run time it takes no type arguments (pyproject.toml).
    WorkerHeartbeatBase = admin.ModelAdmin[WorkerHeartbeat]
    McpCancellationBase = admin.ModelAdmin[McpCancellation]
else:
    WorkerHeartbeatBase = McpCancellationBase = admin.ModelAdmin


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(WorkerHeartbeatBase):
    """Read-only: written by the worker's heartbeat task, read by /health."""

    list_display = ("name", "beat_at", "host", "pid")
    search_fields = ("name", "host")
    readonly_fields = ("name", "beat_at", "host", "pid")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(McpCancellation)
class McpCancellationAdmin(McpCancellationBase):
    """Read-only log of notifications/cancelled, shared between replicas; purged after a day."""

    list_display = ("endpoint", "request_id", "reason", "created_at")
    list_filter = ("endpoint",)
    search_fields = ("request_id", "reason")
    readonly_fields = ("endpoint", "request_id", "reason", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
