"""Slugs unique across wings, and `[[bare-name]]` links resolved to the most specific note.

A brain folder can hold two files with the same name in different wings
(`wiki/concepts/pgvector.md`, `wiki/entities/pgvector.md`), as the Go
hyperguild allowed. The rule:

- **Slugs.** A file's note gets the first of these that no other file's note
  holds: the bare slug (`pgvector`), the wing-qualified one
  (`entities/pgvector`), the wing-and-hall-qualified one
  (`entities/databases/pgvector`); a raw note's qualifier is `raw`
  (`raw/pgvector`); past those, the most qualified one numbered
  (`entities/databases/pgvector-2`). Files claim in a fixed order (wiki
  before raw, shallow before deep, then by path). A note keeps its slug for
  as long as its file keeps its path, so re-importing never renames anything.
- **Links.** `[[pgvector]]` (or `related: [pgvector]`) may mean any note whose
  slug is `pgvector` or ends in `/pgvector`. The most specific one wins: the
  note in the linking note's wing and hall, then in its wing, then any.
  When several are equally specific the link is **ambiguous**: it resolves to
  the note holding the bare slug (or the shortest slug), and the ambiguity is
  reported by the import and shown on the note (`brain_get`).
  `[[entities/pgvector]]` names one note exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from django.db import connection

from brain.models import Note, NoteStatus
from brain.slugs import MAX_SLUG_LENGTH, numbered

RAW_QUALIFIER = "raw"


def slug_candidates(status: str, wing: str, hall: str, bare: str) -> list[str]:
    """The slugs a file's note may take, in order of preference."""
    if status == NoteStatus.WIKI:
        qualified = [f"{wing}/{bare}" if wing else "", f"{wing}/{hall}/{bare}" if wing and hall else ""]
    else:
        qualified = [f"{RAW_QUALIFIER}/{bare}"]
    found: list[str] = []
    for slug in [bare, *qualified]:
        if slug and slug not in found and len(slug) <= MAX_SLUG_LENGTH:
            found.append(slug)
    # Last resort (only a folder built to collide gets here): the most qualified slug, numbered.
    most = found[-1]
    found += [numbered(most, number) for number in range(2, 10) if numbered(most, number) not in found]
    return found


def choose_slug(rel_path: str, candidates: list[str], holder: Callable[[str], str | None]) -> str | None:
    """The first candidate that is free or already held by the note of `rel_path`; None when all are taken.

    `holder(slug)` is the path of the file whose note holds `slug` ("" for a
    note with no file, None for a free slug).
    """
    for slug in candidates:
        held_by = holder(slug)
        if held_by is None or held_by == rel_path:
            return slug
    return None


def suffixes(slug: str) -> list[str]:
    """'entities/databases/pgvector' → ['entities/databases/pgvector', 'databases/pgvector', 'pgvector']."""
    parts = slug.split("/")
    return ["/".join(parts[index:]) for index in range(len(parts))]


LinkCandidate = tuple[int, str, str, str]  # a note a link target may mean: (id, slug, wing, hall)


@dataclass(frozen=True)
class Resolution:
    target_id: int | None
    target_slug: str | None
    ambiguous: tuple[str, ...] = ()  # the equally specific candidates, when there are several


def _specificity(candidate: LinkCandidate, source_wing: str, source_hall: str) -> int:
    _, _, wing, hall = candidate
    if source_wing and wing == source_wing:
        return 2 if source_hall and hall == source_hall else 1
    return 0


# Link targets per candidate query (two arrays of this many parameters).
TARGETS_PER_QUERY = 1000

# A target slug → the (id, slug, wing, hall) rows of the notes it may mean.
Candidates = Mapping[str, list[LinkCandidate]]

# The notes each target may mean, one index lookup per target: its slug equal, or its reversed slug in the
# range of strings starting with the reversed "/target" (the note_slug_reversed index is text_pattern_ops,
# whose ~>=~ and ~<~ compare bytes, so that range is exactly those strings; "0" is the byte after "/").
# A filter OR-ing a condition per target scans every note once per target instead.
_CANDIDATES_SQL = """
SELECT n.id, n.slug, n.wing, n.hall FROM unnest(%(targets)s::text[]) AS t(target)
JOIN {table} n ON n.slug = t.target
UNION
SELECT n.id, n.slug, n.wing, n.hall FROM unnest(%(targets)s::text[]) AS t(target)
CROSS JOIN LATERAL (
    SELECT id, slug, wing, hall FROM {table}
    WHERE reverse(slug) ~>=~ (reverse(t.target) || '/') AND reverse(slug) ~<~ (reverse(t.target) || '0')
) n
"""


def link_candidates(targets: Iterable[str]) -> Candidates:
    """Every note each target may mean (slug equal, or ending in `/target`), in one query per 1,000 targets."""
    wanted = sorted(set(targets))
    found: dict[str, list[LinkCandidate]] = {}
    sql = _CANDIDATES_SQL.format(table=connection.ops.quote_name(Note._meta.db_table))
    for start in range(0, len(wanted), TARGETS_PER_QUERY):
        part = wanted[start : start + TARGETS_PER_QUERY]
        with connection.cursor() as cursor:
            cursor.execute(sql, {"targets": part})
            rows = cursor.fetchall()
        asked = set(part)
        for row in rows:
            for suffix in suffixes(row[1]):
                if suffix in asked:
                    found.setdefault(suffix, []).append((row[0], row[1], row[2], row[3]))
    return found


def resolve_targets(
    targets: Iterable[str], *, wing: str, hall: str, exclude_id: int | None = None
) -> Mapping[str, Resolution]:
    """How each link target of a note in (`wing`, `hall`) resolves, in one query."""
    targets = sorted(set(targets))
    if not targets:
        return {}
    return resolve_with(link_candidates(targets), targets, wing=wing, hall=hall, exclude_id=exclude_id)


def resolve_with(
    candidates: Candidates, targets: Iterable[str], *, wing: str, hall: str, exclude_id: int | None = None
) -> Mapping[str, Resolution]:
    """`resolve_targets` from candidates already read (`link_candidates`): many notes' links, few queries."""
    resolved: dict[str, Resolution] = {}
    for target in sorted(set(targets)):
        rows = candidates.get(target, [])
        if exclude_id is not None and len(rows) > 1:
            # A note never resolves its own bare-name link to itself when another note fits.
            rows = [row for row in rows if row[0] != exclude_id] or rows
        if not rows:
            resolved[target] = Resolution(None, None)
            continue
        best = max(_specificity(row, wing, hall) for row in rows)
        top = [row for row in rows if _specificity(row, wing, hall) == best]
        exact = [row for row in top if row[1] == target]
        chosen = exact[0] if exact else min(top, key=lambda row: (len(row[1]), row[1]))
        ambiguous = tuple(sorted(row[1] for row in top)) if len(top) > 1 else ()
        resolved[target] = Resolution(chosen[0], chosen[1], ambiguous)
    return resolved
