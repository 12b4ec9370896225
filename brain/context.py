"""brain_context: the wiki notes a session should see when it starts on a project.

How candidates are found and scored (each step adds candidates or raises
scores; a note found several ways keeps its best score, then gets boosts):

1. Seeds. `search(project name)` — BM25, or hybrid when an embedder is on —
   top SEED_LIMIT, only notes that pass search's relevance floors
   (`brain.floors`): a project the brain knows nothing about gets no seeds,
   hence no graph neighbours, and an empty list rather than the nearest
   unrelated notes. Scores come from the rank, not the raw search score, so
   BM25 and fused scores mix the same way: rank r (0-based) scores
   1 / (1 + r).
2. Path seeds. With `recent_files`, `search(path tokens)` adds its hits at
   PATH_SEED_WEIGHT times the rank score.
3. Graph. The top GRAPH_SEEDS seeds expand GRAPH_DEPTH hops over resolved
   links in either direction; a neighbour at distance d of a seed scoring s
   scores s · GRAPH_DECAY ** d (so a 2-hop neighbour of the best seed ties
   the 4th seed).
4. Path boost. A candidate whose title or body shares words with the
   recent files' paths (`internal/graphstore/pg.go` → `graphstore`; a word
   of the note that begins a path word counts too, so "graph" matches it)
   gains PATH_BOOST per shared word, at most PATH_BOOST_MAX_TOKENS of them.
   The files a session is touching are strong evidence: one shared word
   lifts the second seed above the first.

Highest score first; ties keep the order in which candidates were found. Truth (docs/truth.md): a
superseded note is never a candidate, every entry carries its `verification`, and stale notes rank
below the others (verified or unverified) whatever their score.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from django.db.models import Q

from brain import bm25
from brain.errors import ContextInputError
from brain.graph import neighbour_distances
from brain.hooks import project_sessions
from brain.models import Note, NoteStatus, Project, VerificationState
from brain.search import search
from brain.truth import verification_dict

SEED_LIMIT = 20
PATH_SEED_WEIGHT = 0.5
GRAPH_SEEDS = 3
GRAPH_DEPTH = 2
GRAPH_DECAY = 0.5
PATH_BOOST = 0.75
PATH_BOOST_MAX_TOKENS = 3
# Path words shorter than this say nothing (`pg`, `db`, `io`).
MIN_PATH_TOKEN = 3
# A word of a note matches a longer path token it begins only when it is this long.
MIN_PREFIX = 4
# Folder and file names that appear in every project and so say nothing about one.
GENERIC_PATH_WORDS = frozenset(
    "src lib libs pkg cmd internal app apps test tests spec specs main index init utils util common "
    "home dev usr tmp var docs doc build dist vendor node_modules scripts".split()
)
EXCERPT_CHARS = 200
MAX_RECENT_FILES = 100
# The project's own raw notes shown apart from the wiki entries (newest first).
RAW_CONTEXT_LIMIT = 5

_PATH_SPLIT = re.compile(r"[^0-9A-Za-z]+")


def project_name(project_root: str) -> str:
    """The project's name: the Project the full path resolves to, else the path's last folder name."""
    project = Project.objects.for_cwd(project_root) if project_root.strip() else None
    if project is not None:
        return project.name
    name = os.path.basename(project_root.strip().rstrip("/\\"))
    if not name:
        raise ContextInputError(f"project_root {project_root!r} has no folder name to search for.")
    return name


def path_words(paths: list[str]) -> list[str]:
    """Lowercased words of file paths, in order, without extensions, short or generic words.

    `internal/graphstore/pg.go` → `["graphstore"]`.
    """
    seen: dict[str, None] = {}
    for path in paths[:MAX_RECENT_FILES]:
        parts = [part for part in re.split(r"[/\\]+", path) if part]
        if parts:
            stem, _extension = os.path.splitext(parts[-1])
            parts[-1] = stem or parts[-1]
        for part in parts:
            for word in _PATH_SPLIT.split(part):
                lowered = word.lower()
                if len(lowered) < MIN_PATH_TOKEN or lowered in GENERIC_PATH_WORDS or lowered.isdigit():
                    continue
                seen.setdefault(lowered, None)
    return list(seen)


def shared_words(note_tokens: set[str], words: list[str]) -> int:
    """How many path words the note mentions: the same stem, or a note word of MIN_PREFIX+
    letters that begins the path word ("graph" in `graphstore`)."""
    prefixes = [token for token in note_tokens if len(token) >= MIN_PREFIX]
    count = 0
    for word in words:
        stems = bm25.tokenize(word)
        if any(stem in note_tokens for stem in stems) or any(word.startswith(prefix) for prefix in prefixes):
            count += 1
    return count


def excerpt(body: str) -> str:
    """The first EXCERPT_CHARS characters of the body (which is stored without its frontmatter)."""
    return body.strip()[:EXCERPT_CHARS]


@dataclass
class Candidate:
    note_id: int
    score: float
    order: int


def context(project_root: str, recent_files: list[str] | None = None, limit: int = 10) -> dict:
    """`{project, entries: [{slug, title, doc_path, excerpt}], degraded, reason, unreviewed, unreviewed_…}`.

    `entries` are wiki notes only; `unreviewed` is a separate list of the project's own recent raw notes.
    """
    name = project_name(project_root)
    candidates: dict[int, Candidate] = {}

    def consider(note_id: int, score: float) -> None:
        found = candidates.get(note_id)
        if found is None:
            candidates[note_id] = Candidate(note_id, score, len(candidates))
        elif score > found.score:
            found.score = score

    seeds = search(name, limit=SEED_LIMIT)
    # An abstention is not a problem to report: an empty list already says "nothing relevant".
    degraded, reason = seeds.degraded, seeds.reason if seeds.degraded else None
    for rank, hit in enumerate(seeds.hits):
        consider(hit.note_id, 1.0 / (1 + rank))

    wanted = path_words(recent_files or [])
    if wanted:
        by_path = search(" ".join(wanted), limit=SEED_LIMIT)
        degraded = degraded or by_path.degraded
        reason = reason or (by_path.reason if by_path.degraded else None)
        for rank, hit in enumerate(by_path.hits):
            consider(hit.note_id, PATH_SEED_WEIGHT / (1 + rank))

    for hit in seeds.hits[:GRAPH_SEEDS]:
        seed_score = candidates[hit.note_id].score
        for note_id, distance in neighbour_distances([hit.note_id], GRAPH_DEPTH, status=NoteStatus.WIKI).items():
            consider(note_id, seed_score * GRAPH_DECAY**distance)

    notes = Note.objects.wiki().current().in_bulk(list(candidates))
    if wanted:
        for candidate in candidates.values():
            note = notes.get(candidate.note_id)
            if note is None:
                continue
            matches = shared_words(set(bm25.tokenize(bm25.note_text(note.title, note.body))), wanted)
            candidate.score += PATH_BOOST * min(matches, PATH_BOOST_MAX_TOKENS)

    ranked = sorted(
        (candidate for candidate in candidates.values() if candidate.note_id in notes),
        key=lambda candidate: (
            notes[candidate.note_id].verification_state == VerificationState.STALE, -candidate.score, candidate.order
        ),
    )[:limit]
    entries = [
        {
            "slug": notes[candidate.note_id].slug,
            "title": notes[candidate.note_id].title,
            "doc_path": notes[candidate.note_id].path,
            "excerpt": excerpt(notes[candidate.note_id].body),
            "verification": verification_dict(notes[candidate.note_id]),
        }
        for candidate in ranked
    ]
    return {
        "project": name, "entries": entries, "degraded": degraded, "reason": reason,
        "unreviewed": project_raw_notes(project_root, [item["slug"] for item in seeds.unreviewed]),
        "unreviewed_matches": seeds.unreviewed_matches, "unreviewed_hint": seeds.unreviewed_hint,
    }  # fmt: skip


def project_raw_notes(project_root: str, matching_slugs: list[str]) -> list[dict]:
    """The project's own recent raw notes: written in one of its sessions, or matching its name."""
    sessions = project_sessions(project_root)
    notes = (
        Note.objects.filter(status=NoteStatus.RAW, superseded_by__isnull=True)
        .filter(Q(session_id__in=sessions) | Q(slug__in=matching_slugs))
        .order_by("-created_at", "-id")[:RAW_CONTEXT_LIMIT]
    )
    return [
        {"slug": note.slug, "title": note.title, "status": note.status, "created_at": note.created_at.isoformat(),
         "excerpt": excerpt(note.body)}
        for note in notes
    ]  # fmt: skip
