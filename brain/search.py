"""Brain search: BM25, vectors and their fusion, written down once.

    search(query, limit=, wing=, hall=, status=) -> SearchResponse

- BM25 over title + body (`brain.bm25`), top `limit · BM25_FANOUT`.
- With an embedder active: the query embedding against the note chunks of
  the active model (pgvector HNSW, cosine), top `limit · BM25_FANOUT ·
  VECTOR_FANOUT` notes, each note ranked at its best chunk.
- Reciprocal Rank Fusion: score = Σ weight / (RRF_K + rank) over the rankers
  that found the note. A note only the vector side found is a full result.
- If the embedder or the vector query fails, BM25 alone answers with
  `degraded=True` and the reason. Search never fails because of an outage.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from brain import bm25, vectors
from brain.errors import BrainError
from brain.models import Note, NoteStatus

logger = logging.getLogger(__name__)

RRF_K = 60
BM25_FANOUT = 3  # BM25 candidates per requested hit, before fusion
VECTOR_FANOUT = 4  # vector candidates per BM25 candidate (top-4N)
BM25_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0
EXCERPT_CHARS = 280
MAX_LIMIT = 50
ANY_STATUS = "any"


class SearchInputError(BrainError, ValueError):
    """The query or a filter is unusable; the message says what to change."""


@dataclass
class Hit:
    note_id: int
    slug: str
    title: str
    path: str
    wing: str
    hall: str
    status: str
    score: float
    excerpt: str
    rankers: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "note_id": self.note_id,
            "slug": self.slug,
            "title": self.title,
            "path": self.path,
            "wing": self.wing,
            "hall": self.hall,
            "status": self.status,
            "score": self.score,
            "excerpt": self.excerpt,
            "rankers": dict(self.rankers),
        }


@dataclass
class SearchResponse:
    hits: list[Hit]
    degraded: bool = False
    reason: str | None = None


def search(
    query: str,
    *,
    limit: int = 10,
    wing: str | None = None,
    hall: str | None = None,
    status: str | None = NoteStatus.WIKI,
) -> SearchResponse:
    """Ranked notes for `query`. `status` None or "any" means every status but archived."""
    query = (query or "").strip()
    if not query:
        raise SearchInputError("The query is empty: give some words to search for.")
    if not 1 <= limit <= MAX_LIMIT:
        raise SearchInputError(f"limit must be between 1 and {MAX_LIMIT}.")
    if status == ANY_STATUS:
        status = None
    if status is not None and status not in NoteStatus.values:
        raise SearchInputError(f"Unknown status {status!r}: use one of {', '.join(NoteStatus.values)} or any.")
    wing = wing or None
    hall = hall or None

    tokens = bm25.tokenize(query)
    ranking = rank_notes(query, depth=limit * BM25_FANOUT, wing=wing, hall=hall, status=status)
    return SearchResponse(
        hits=_hits(ranking.fused[:limit], tokens, ranking.passages), degraded=ranking.degraded, reason=ranking.reason
    )


@dataclass
class Ranking:
    fused: list[tuple[int, float, dict[str, int]]]  # (note id, score, {ranker: rank}) best first
    passages: dict[int, str]  # note id → its best chunk, from the vector side
    degraded: bool = False
    reason: str | None = None


def rank_notes(
    query: str,
    *,
    depth: int,
    wing: str | None = None,
    hall: str | None = None,
    status: str | None = None,
    rankers: tuple[str, ...] = ("bm25", "vector"),
    embedder=None,
) -> Ranking:
    """BM25 top-`depth` and (embedder on) vector top-`depth`·VECTOR_FANOUT, fused.

    `search()` is this cut to `limit` plus the note fields; `brain_eval` calls it
    with one ranker at a time and a depth of 100.
    """
    rankings: dict[str, list[int]] = {}
    bm25_scores: dict[int, float] = {}
    if "bm25" in rankers:
        bm25_ranking = bm25.current_index().rank(bm25.tokenize(query), limit=depth, wing=wing, hall=hall, status=status)
        rankings["bm25"] = [note_id for note_id, _ in bm25_ranking]
        bm25_scores = dict(bm25_ranking)
    passages: dict[int, str] = {}
    degraded, reason = False, None

    if "vector" in rankers and (embedder is not None or vectors.active()):
        vector_depth = depth * VECTOR_FANOUT if "bm25" in rankers else depth
        try:
            vector_ranking = vectors.rank(
                query, limit=vector_depth, wing=wing, hall=hall, status=status, embedder=embedder
            )
        except Exception as exc:  # noqa: BLE001 — an outage lowers quality, it never fails the query
            logger.warning("vector search failed, answering from BM25: %s", exc)
            degraded, reason = True, f"vector search unavailable: {exc}"
        else:
            rankings["vector"] = [note_id for note_id, _ in vector_ranking]
            passages = dict(vector_ranking)

    fused = fuse(rankings, {"bm25": BM25_WEIGHT, "vector": VECTOR_WEIGHT})
    if "vector" not in rankings:
        # BM25 alone: report the BM25 score itself, more telling than 1/(k+rank).
        fused = [(note_id, bm25_scores[note_id], ranks) for note_id, _, ranks in fused]
    return Ranking(fused=fused, passages=passages, degraded=degraded, reason=reason)


def fuse(rankings: dict[str, list[int]], weights: dict[str, float]) -> list[tuple[int, float, dict[str, int]]]:
    """Reciprocal Rank Fusion of best-first id lists → (id, score, {ranker: rank}) best first."""
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for name, ids in rankings.items():
        for rank, note_id in enumerate(ids, start=1):
            scores[note_id] = scores.get(note_id, 0.0) + weights.get(name, 1.0) / (RRF_K + rank)
            ranks.setdefault(note_id, {})[name] = rank
    order = sorted(scores, key=lambda i: (-scores[i], min(ranks[i].values()), i))
    return [(i, scores[i], ranks[i]) for i in order]


def _hits(fused, tokens: list[str], passages: dict[int, str]) -> list[Hit]:
    ids = [note_id for note_id, _, _ in fused]
    notes = Note.objects.in_bulk(ids)
    hits = []
    for note_id, score, ranks in fused:
        note = notes.get(note_id)
        if note is None or note.status == NoteStatus.ARCHIVED:  # changed since the index was built
            continue
        hits.append(
            Hit(
                note_id=note.id,
                slug=note.slug,
                title=note.title,
                path=note.path,
                wing=note.wing,
                hall=note.hall,
                status=note.status,
                score=float(score),
                excerpt=excerpt(note.body, tokens, fallback=passages.get(note_id)),
                rankers=ranks,
            )
        )
    return hits


PASSAGE_SPLIT_RE = re.compile(r"\n\s*\n")


def excerpt(body: str, tokens: list[str], *, fallback: str | None = None, size: int = EXCERPT_CHARS) -> str:
    """The passage of `body` holding the most distinct query terms, cut to about `size` characters
    around its first match. With no term in the body, the vector side's best chunk (or the start)."""
    wanted = set(tokens)
    best, best_hits = "", 0
    for passage in PASSAGE_SPLIT_RE.split(body):
        hits = len(wanted.intersection(bm25.tokenize(passage)))
        if hits > best_hits:
            best, best_hits = passage, hits
    if not best_hits:
        return _clip(fallback or body, 0, size)
    # Centre the window on the first matching word.
    start = 0
    for match in bm25.WORD_RE.finditer(best):
        word_tokens = bm25.tokenize(match.group())
        if word_tokens and word_tokens[0] in wanted:
            start = match.start()
            break
    return _clip(best, max(0, start - size // 4), size)


def _clip(text: str, start: int, size: int) -> str:
    text = text.strip()
    piece = " ".join(text[start : start + size].split())
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + size < len(text) else ""
    return f"{prefix}{piece}{suffix}"
