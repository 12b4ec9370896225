"""A diff's hunks cut to what a reader needs: the hunk that changes an anchor's lines (or removes its line), and
as much around that change as MAX_HUNK_CHARS holds (the evidence of a stale note, docs/truth.md)."""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_HUNK_CHARS = 2000


def hunk_within(hunks: list[str], start: int, end: int) -> str:
    """The hunk that changes lines start..end of the old file, cut to MAX_HUNK_CHARS around its first change there."""
    header = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+")
    for hunk in hunks:
        lines = hunk.splitlines()
        match = header.match(lines[0]) if lines else None
        if not match:
            continue
        old = int(match.group(1))
        for index, line in enumerate(lines[1:], start=1):
            if line.startswith(("-", "+")) and start <= old <= end + 1:
                return cut_around(lines, index)
            if not line.startswith("+"):
                old += 1
    return ""


def hunk_around(hunks: list[str], removes: Callable[[str], bool]) -> str:
    """The hunk that removes the anchor, cut to MAX_HUNK_CHARS around that line (else the first hunk's start)."""
    for hunk in hunks:
        lines = hunk.splitlines()
        at = next((i for i, line in enumerate(lines) if i and removes(line)), None)
        if at is not None:
            return cut_around(lines, at)
    return cut_around(hunks[0].splitlines(), 1) if hunks else ""


def cut_around(lines: list[str], at: int) -> str:
    """The header line and as many lines around lines[at] as MAX_HUNK_CHARS holds, a line before for a line after."""
    header, body, at = lines[0], lines[1:], at - 1
    if not body:
        return header[:MAX_HUNK_CHARS]
    budget = MAX_HUNK_CHARS - len(header) - 1
    low = high = at
    used = len(body[at]) if body else 0
    if used > budget:
        return (header + "\n" + body[at])[:MAX_HUNK_CHARS]
    grew = True
    while grew:
        grew = False
        for step in (high + 1, low - 1) if high - at <= at - low else (low - 1, high + 1):
            if 0 <= step < len(body) and used + len(body[step]) + 1 <= budget and (step > high or step < low):
                used += len(body[step]) + 1
                low, high = min(low, step), max(high, step)
                grew = True
    return "\n".join([header, *body[low : high + 1]])
