"""Line diffs as safe HTML, for reviewers comparing two texts (merges, revisions, DPO pairs)."""

from __future__ import annotations

import difflib

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

CONTEXT_LINES = 3
MAX_DIFF_LINES = 2000  # a diff longer than this is cut, and says so


def diff_lines(before: str, after: str, *, context: int = CONTEXT_LINES) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is "del", "ins", "same" or "hunk" (an `@@` line)."""
    lines = []
    for line in difflib.unified_diff(
        (before or "").splitlines(), (after or "").splitlines(), lineterm="", n=context
    ):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(("hunk", line))
        elif line.startswith("-"):
            lines.append(("del", line[1:]))
        elif line.startswith("+"):
            lines.append(("ins", line[1:]))
        else:
            lines.append(("same", line[1:]))
    return lines


def html_diff(before: str, after: str, *, context: int = CONTEXT_LINES) -> SafeString:
    """A `<pre class="diff">` with one escaped line per `<del>`, `<ins>` or `<span>`; empty when equal."""
    lines = diff_lines(before, after, context=context)
    if not lines:
        return mark_safe("")
    parts = []
    for kind, text in lines[:MAX_DIFF_LINES]:
        if kind == "del":
            parts.append(f'<del class="diff">{escape(text)}</del>')
        elif kind == "ins":
            parts.append(f'<ins class="diff">{escape(text)}</ins>')
        elif kind == "hunk":
            parts.append(f'<span class="diff-hunk">{escape(text)}</span>')
        else:
            parts.append(f'<span class="diff-same">{escape(text)}</span>')
    if len(lines) > MAX_DIFF_LINES:
        parts.append(f'<span class="diff-hunk">… {len(lines) - MAX_DIFF_LINES} more lines</span>')
    # Each line is a block element: no newline between them, or <pre> would show blank lines.
    return mark_safe('<pre class="diff">' + "".join(parts) + "</pre>")  # noqa: S308 — every line escaped above


def similarity(a: str, b: str) -> float:
    """0..1, how much of two texts is the same (difflib's ratio over words)."""
    words_a, words_b = (a or "").split(), (b or "").split()
    if not words_a and not words_b:
        return 1.0
    return difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).ratio()
