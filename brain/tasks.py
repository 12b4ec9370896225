"""django-q2 tasks of the brain (small functions that call folder logic and actions)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

MIRROR_SCHEDULE = "brain-mirror"


def schedules() -> list[tuple[str, str, int]]:
    """Periodic schedules installed by `do_ensure_schedules()`: the mirror runs only with BRAIN_DIR set."""
    wanted: list[tuple[str, str, int]] = []
    if settings.BRAIN_DIR:
        wanted.append((MIRROR_SCHEDULE, "brain.tasks.sync_brain_dir", settings.BRAIN_SYNC_INTERVAL))
    return wanted


def sync_brain_dir() -> dict:
    """One round of the two-way BRAIN_DIR mirror; returns its summary (kept in the django-q2 result)."""
    if not settings.BRAIN_DIR:
        return {"skipped": "BRAIN_DIR is not set"}
    from brain.folder import sync_mirror

    return sync_mirror(Path(settings.BRAIN_DIR)).as_dict()
