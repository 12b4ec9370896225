"""Cutting text down for a message or a preview, and taking bidi controls out of a line; written once."""

from __future__ import annotations

import re

# Unicode bidirectional formatting characters (UAX #9: embeddings, overrides, isolates, marks). In a
# title or a file name they make text display in another order than it is stored
# ("invoice\u202egpj.exe" shows as "invoiceexe.jpg"), the "Trojan Source" trick.
BIDI_CONTROLS_RE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def without_bidi_controls(text: str) -> str:
    """`text` with every bidi control character removed."""
    return BIDI_CONTROLS_RE.sub("", text)


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
