"""Service-level django-q2 tasks."""

from __future__ import annotations

from hyperguild.actions import do_record_worker_heartbeat


def heartbeat() -> str:
    """Scheduled every HYPERGUILD_WORKER_HEARTBEAT_SECONDS; proves a worker runs."""
    beat = do_record_worker_heartbeat()
    return beat.beat_at.isoformat()
