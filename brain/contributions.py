"""What the brain contributes to the core's home page (registered in BrainConfig.ready())."""

from __future__ import annotations

from typing import TypedDict

from django.db.models import Count

from brain.models import Note, NoteStatus


class NoteCounts(TypedDict):
    raw_count: int
    wiki_count: int


def home_counts() -> NoteCounts:
    """Raw notes waiting for review and wiki notes (the home page's `raw_count`, `wiki_count`)."""
    counts = {row["status"]: row["n"] for row in Note.objects.order_by().values("status").annotate(n=Count("id"))}
    return {"raw_count": counts.get(NoteStatus.RAW, 0), "wiki_count": counts.get(NoteStatus.WIKI, 0)}
