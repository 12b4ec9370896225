"""What a run keeps of a process's output: the head and the tail, within `SUPERVISOR_OUTPUT_CAP`.

Below both the process runner (`supervisor.executor`) and the actions that store a run's output
(`supervisor.actions`), so neither imports the other for it.
"""

from __future__ import annotations

from django.conf import settings


def cap(text: str, limit: int | None = None) -> str:
    """Keep the head and the tail of long output (the tail is where errors are)."""
    limit = limit or settings.SUPERVISOR_OUTPUT_CAP
    if len(text) <= limit:
        return text
    marker = f"\n…[{len(text) - limit} characters cut]…\n"
    head = limit // 4
    tail = limit - head - len(marker)
    return text[:head] + marker + text[-tail:]
