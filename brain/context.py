"""brain_context: the wiki notes a session should see when it starts on a project.

How candidates are found and scored (each step adds candidates or raises
scores; a note found several ways keeps its best score, then gets boosts):

1. Seeds. `search(project name)` — BM25, or hybrid when an embedder is on —
   top SEED_LIMIT, only notes that pass search's relevance floors
   (`brain.floors`): a project the brain knows nothing about gets no seeds,
   hence no graph neighbours, and an empty list rather than the nearest
   unrelated notes. A name of several words (`unrelated-app`) must appear
   as a name in a seed, its words together in order: a note that merely says
   "unrelated" is not about the project. Scores come from the rank, not the
   raw search score, so BM25 and fused scores mix the same way: rank r
   (0-based) scores 1 / (1 + r).
2. Path seeds. With `recent_files`, `search(path tokens)` adds its hits at
   PATH_SEED_WEIGHT times the rank score.
3. Graph. Every seed (name and path seeds alike: all passed the floors)
   expands GRAPH_DEPTH hops over resolved links in either direction; a
   neighbour at distance d of a seed scoring s scores s · GRAPH_DECAY ** d,
   the best over its seeds (so a 2-hop neighbour of the best seed ties the
   4th seed). Neighbours fill the slots the seeds leave free, and a note
   that never names the project comes in through the notes that link to it.
4. Path boost. A candidate whose title or body shares words with the
   recent files' paths (`internal/graphstore/pg.go` → `graphstore`; a word
   of the note that begins a path word counts too, so "graph" matches it)
   gains PATH_BOOST per shared word, at most PATH_BOOST_MAX_TOKENS of them.
   The files a session is touching are strong evidence: one shared word
   lifts the second seed above the first.

Highest score first; ties keep the order in which candidates were found.
Each entry's excerpt is the note's passage that best matches the project
name and the recent files' words (`brain.passages`: no heading line, no
HTML comment), cut to EXCERPT_CHARS; a note that matches none of them (a
graph neighbour) shows its first passage.

Truth (docs/truth.md): a superseded note is never a candidate, every entry carries its
`verification`, and stale notes rank below the others (verified or unverified) whatever their score;
the notes chosen are shown proven first, then verified, then unverified (TRUST_ORDER).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from django.db.models import Q

from brain import bm25
from brain.callbacks import project_sessions
from brain.errors import ContextInputError
from brain.models import Note, NoteLink, NoteStatus, Project, VerificationState
from brain.passages import best_sentences, score_passages, split_passages
from brain.search import UnreviewedJson, search
from brain.truth import VerificationJson, verification_dict

# How far a session can trust a note's text, most first (docs/truth.md): the order brain_context shows them in.
TRUST_ORDER: dict[str, int] = {
    VerificationState.PROVEN: 0,
    VerificationState.VERIFIED: 1,
    VerificationState.UNVERIFIED: 2,
    VerificationState.STALE: 3,
}

SEED_LIMIT = 20
PATH_SEED_WEIGHT = 0.5
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


def excerpt(title: str, body: str, query: str = "") -> str:
    """The note's passage that best matches `query` (its first passage when none does), without
    heading lines or HTML comments, on one line and cut to about EXCERPT_CHARS characters."""
    passages = split_passages(title, body)
    if not passages:
        return ""
    best = passages[0]
    if query:
        ranked = score_passages(query, [(None, passage) for passage in passages])
        if ranked and ranked[0].score > 0:
            best = ranked[0].passage
    return best_sentences(best, query, EXCERPT_CHARS)


def project_words(name: str) -> list[str]:
    return [word for word in _PATH_SPLIT.split(name) if word]


def names_the_project(name: str, title: str, body: str) -> bool:
    """Whether the note names the project: for a name of several words (`unrelated-app`, `Ledgerly API`),
    those words together and in order, joined by spaces or punctuation; a one-word name always passes
    (search matched it)."""
    words = project_words(name)
    if len(words) < 2:
        return True
    pattern = re.compile(r"(?<![0-9A-Za-z])" + r"[\s_\-./:]*".join(map(re.escape, words)) + r"(?![0-9A-Za-z])", re.I)
    return bool(pattern.search(title) or pattern.search(body))


def neighbour_scores(seeds: Mapping[int, float], depth: int) -> Mapping[int, float]:
    """{note id: best seed score · GRAPH_DECAY ** hops} for the wiki notes within `depth` hops of any seed
    (a seed only when another seed's neighbourhood scores it higher). One query per hop, however many seeds."""
    best = dict(seeds)
    frontier = dict(seeds)
    found: dict[int, float] = {}
    for _ in range(depth):
        if not frontier:
            break
        edges = NoteLink.objects.filter(
            Q(source_id__in=frontier) | Q(target_id__in=frontier),
            target__isnull=False,
            source__status=NoteStatus.WIKI,
            target__status=NoteStatus.WIKI,
        ).values_list("source_id", "target_id")
        reached: dict[int, float] = {}
        for source_id, target_id in edges:
            for here, there in ((source_id, target_id), (target_id, source_id)):
                if here in frontier:
                    score = frontier[here] * GRAPH_DECAY
                    if score > best.get(there, 0.0) and score > reached.get(there, 0.0):
                        reached[there] = score
        for note_id, score in reached.items():
            best[note_id] = found[note_id] = score
        frontier = reached
    return found


class ContextEntryJson(TypedDict):
    slug: str
    title: str
    doc_path: str
    excerpt: str
    verification: VerificationJson


class ProjectRawNoteJson(UnreviewedJson):
    created_at: str  # ISO 8601
    excerpt: str


class ContextJson(TypedDict):
    """What `context()` returns: `brain.answer_tools.ContextResult` on the wire."""

    project: str
    entries: list[ContextEntryJson]
    degraded: bool
    reason: str | None
    unreviewed: list[ProjectRawNoteJson]
    unreviewed_matches: int
    unreviewed_hint: str | None


@dataclass
class Candidate:
    note_id: int
    score: float
    order: int


def context(project_root: str, recent_files: list[str] | None = None, limit: int = 10) -> ContextJson:
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
    named = seeds.hits
    if len(project_words(name)) > 1:
        bodies = dict(Note.objects.filter(id__in=[hit.note_id for hit in named]).values_list("id", "body"))
        named = [hit for hit in named if names_the_project(name, hit.title, bodies.get(hit.note_id, ""))]
    for rank, hit in enumerate(named):
        consider(hit.note_id, 1.0 / (1 + rank))

    wanted = path_words(recent_files or [])
    if wanted:
        by_path = search(" ".join(wanted), limit=SEED_LIMIT)
        degraded = degraded or by_path.degraded
        reason = reason or (by_path.reason if by_path.degraded else None)
        for rank, hit in enumerate(by_path.hits):
            consider(hit.note_id, PATH_SEED_WEIGHT / (1 + rank))

    for note_id, score in neighbour_scores(
        {note_id: candidate.score for note_id, candidate in candidates.items()}, GRAPH_DEPTH
    ).items():
        consider(note_id, score)

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
            notes[candidate.note_id].verification_state == VerificationState.STALE,
            -candidate.score,
            candidate.order,
        ),
    )[:limit]
    # Of the notes chosen, the better proven come first: proven, then verified, then unverified (stale last).
    ranked.sort(key=lambda candidate: TRUST_ORDER.get(notes[candidate.note_id].verification_state, 2))
    query = " ".join([name, *wanted])
    entries: list[ContextEntryJson] = [
        {
            "slug": notes[candidate.note_id].slug,
            "title": notes[candidate.note_id].title,
            "doc_path": notes[candidate.note_id].path,
            "excerpt": excerpt(notes[candidate.note_id].title, notes[candidate.note_id].body, query),
            "verification": verification_dict(notes[candidate.note_id]),
        }
        for candidate in ranked
    ]
    return {
        "project": name,
        "entries": entries,
        "degraded": degraded,
        "reason": reason,
        "unreviewed": project_raw_notes(name, project_root, [item["slug"] for item in seeds.unreviewed]),
        "unreviewed_matches": seeds.unreviewed_matches,
        "unreviewed_hint": seeds.unreviewed_hint,
    }


def project_raw_notes(name: str, project_root: str, matching_slugs: list[str]) -> list[ProjectRawNoteJson]:
    """The project's own recent raw notes: written in one of its sessions, or naming it (as the entries do)."""
    sessions = project_sessions(project_root)
    candidates = (
        Note.objects.filter(status=NoteStatus.RAW, superseded_by__isnull=True)
        .filter(Q(session_id__in=sessions) | Q(slug__in=matching_slugs))
        .order_by("-created_at", "-id")
    )
    notes = [
        note
        for note in candidates[: RAW_CONTEXT_LIMIT + len(matching_slugs)]
        if note.session_id in sessions or names_the_project(name, note.title, note.body)
    ][:RAW_CONTEXT_LIMIT]
    return [
        {
            "slug": note.slug,
            "title": note.title,
            "status": note.status,
            "created_at": note.created_at.isoformat(),
            "excerpt": excerpt(note.title, note.body),
        }
        for note in notes
    ]
