"""Template filters for changes, replays and redactions (the curation UI and the session timeline)."""

from __future__ import annotations

from django import template

from hyperguild.lib.diffs import TRUNCATED_MARKER, diff_block
from hyperguild.lib.redaction import redaction_summary

register = template.Library()


@register.filter
def redactions_text(flags) -> str:
    """'3 redacted: message (aws_access_key ×1), …' or ''."""
    return redaction_summary(flags if isinstance(flags, list) else [])


@register.filter
def diff_of(messages) -> str | None:
    """The ```diff block of an example side's assistant messages, or None."""
    if not isinstance(messages, list):
        return None
    return diff_block("\n".join(m.get("content", "") for m in messages if isinstance(m, dict) and m.get("role") == "assistant"))


@register.filter
def diff_lines(diff) -> list[tuple[str, str]]:
    """(css class, line) per diff line: file headers, hunk headers, added, removed, context, cut marker."""
    lines = []
    for line in (diff or "").splitlines():
        if line.startswith(TRUNCATED_MARKER):
            kind = "cut"
        elif line.startswith(("diff --git", "--- ", "+++ ", "new file mode", "deleted file mode", "Binary files")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith("\\"):
            kind = "meta"
        else:
            kind = "ctx"
        lines.append((kind, line))
    return lines


@register.filter
def replay_side(replay, side: str) -> dict | None:
    """One side's replay result ({applied, verifies, why, exit_code, output}) from an example's `replay`."""
    if not isinstance(replay, dict):
        return None
    return (replay.get("sides") or {}).get(side)
