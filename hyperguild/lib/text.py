"""Cutting text down for a message or a preview, written once."""

from __future__ import annotations

# How much of a response body (or any other text) goes into an error message.
EXCERPT_CHARS = 300


def excerpt(text: str | bytes | None, limit: int = EXCERPT_CHARS) -> str:
    """The opening of `text` on one line (white space folded), cut at `limit` characters with an ellipsis."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
