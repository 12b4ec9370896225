"""Path-safe slugs: lowercase `a-z0-9-` segments joined by `/`.

A slug becomes part of a file path on export and in the mirror, so anything
that could climb out of a folder (`..`, a leading `/`, NUL) is refused with
a message that says what a good slug looks like.
"""

from __future__ import annotations

import re

from anyascii import anyascii

from brain.errors import SlugError
from brain.limits import MAX_SEGMENT_LENGTH, MAX_SLUG_LENGTH

FALLBACK_SLUG = "note"
SEGMENT_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SLUG_RULE = "a slug is lowercase a-z, 0-9 and '-' segments joined by '/', e.g. 'concepts/async-io'"


def validate_slug(slug: str) -> str:
    """Return `slug` if it is path-safe, else raise SlugError."""
    if not isinstance(slug, str) or not slug:
        raise SlugError(f"slug is empty; {SLUG_RULE}")
    if "\x00" in slug:
        raise SlugError("slug contains a NUL character; " + SLUG_RULE)
    if len(slug) > MAX_SLUG_LENGTH:
        raise SlugError(f"slug is {len(slug)} characters long, over the limit of {MAX_SLUG_LENGTH}")
    if slug.startswith("/") or slug.startswith("\\") or re.match(r"^[a-zA-Z]:", slug):
        raise SlugError(f"slug {slug!r} is an absolute path; use a relative slug such as 'concepts/async-io'")
    segments = slug.split("/")
    if any(segment in ("..", ".") for segment in segments):
        raise SlugError(f"slug {slug!r} contains '..' or '.' segments; {SLUG_RULE}")
    for segment in segments:
        if not SEGMENT_RE.match(segment):
            raise SlugError(f"slug {slug!r} has a bad segment {segment!r}; {SLUG_RULE}")
        if len(segment) > MAX_SEGMENT_LENGTH:
            raise SlugError(f"slug segment {segment[:20]!r}… is over {MAX_SEGMENT_LENGTH} characters")
    return slug


def validate_segment(value: str, what: str) -> str:
    """A wing or hall: one slug segment (or empty)."""
    if value == "":
        return value
    if not isinstance(value, str) or not SEGMENT_RE.match(value) or len(value) > MAX_SEGMENT_LENGTH:
        raise SlugError(f"{what} {value!r} is not valid: use lowercase a-z, 0-9 and '-', e.g. 'concepts'")
    return value


def slugify_segment(text: str) -> str:
    """Any text → one slug segment ('' if nothing usable is left).

    Every script is transliterated (`anyascii`: 'Привет' → 'privet', '日本語' → 'ribenyu'), so a
    Cyrillic letter inside a Latin word ('Pоstgres') becomes its Latin look-alike instead of vanishing;
    bidi controls and other format characters transliterate to nothing.
    """
    ascii_text = anyascii(text or "").lower()
    segment = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")
    return segment[:MAX_SEGMENT_LENGTH].rstrip("-")


def slugify_title(title: str) -> str:
    """A title → a one-segment slug; never empty (falls back to 'note')."""
    return slugify_segment(title)[:80].rstrip("-") or FALLBACK_SLUG


def slugify_path(text: str) -> str:
    """'Concepts/Async IO' → 'concepts/async-io'; '' when nothing usable is left."""
    segments = [slugify_segment(part) for part in (text or "").replace("\\", "/").split("/")]
    return "/".join(segment for segment in segments if segment)[:MAX_SLUG_LENGTH].strip("/-")


def numbered(base: str, number: int) -> str:
    """base, base-2, base-3, … kept under the length limit."""
    if number <= 1:
        return base
    suffix = f"-{number}"
    return base[: MAX_SLUG_LENGTH - len(suffix)].rstrip("-/") + suffix
