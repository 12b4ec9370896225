"""The people app's django-q2 tasks."""

from __future__ import annotations

from django.conf import settings

from people.actions import do_purge_credential_uses

# Credential uses are kept for days (HYPERGUILD_AUDIT_KEEP_DAYS): purged with the worker's heartbeat, as before.
PURGE_NAME = "people-purge-credential-uses"


def purge_credential_uses() -> int:
    """Forget audit rows older than HYPERGUILD_AUDIT_KEEP_DAYS; how many were deleted."""
    return do_purge_credential_uses()


def schedules() -> list[tuple[str, str, int]]:
    return [(PURGE_NAME, "people.tasks.purge_credential_uses", settings.HYPERGUILD_WORKER_HEARTBEAT_SECONDS)]
