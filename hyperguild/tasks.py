"""Service-level django-q2 tasks."""

from __future__ import annotations

from hyperguild.actions import do_purge_mcp_cancellations, do_record_worker_heartbeat


def heartbeat() -> str:
    """Scheduled every HYPERGUILD_WORKER_HEARTBEAT_SECONDS; proves a worker runs.

    It also purges day-old MCP cancellation records, a job too small for a schedule of its
    own (the people app purges its old audit rows on a schedule of its own, people.tasks).
    """
    beat = do_record_worker_heartbeat()
    do_purge_mcp_cancellations()
    return beat.beat_at.isoformat()
