"""Brain search: BM25, vectors and their fusion, written down once.

    search(query, limit=, wing=, hall=, status=) -> SearchResponse

- BM25 over title + body (`brain.bm25`), top `limit · BM25_FANOUT` (at least SECTION_POOL
  candidates), reordered by each note's best section (`brain.bm25.sections`): a long page is
  ranked by the part of it that answers, its whole page's score breaking ties.
- With an embedder active: the query embedding against the note chunks of
  the active model (pgvector HNSW, cosine), top `limit · BM25_FANOUT ·
  VECTOR_FANOUT` notes, each note ranked at its best chunk.
- Relevance floors (`brain.floors`): a BM25 hit must match BRAIN_BM25_FLOOR of
  the query's idf weight (and hold as many of its words as no note holds, and a hit holding one
  word beside an unseen one must hold that word itself, not only its stem), a
  vector hit must reach its model's cosine floor.
  Hits below their ranker's floor are dropped before fusion.
- Reciprocal Rank Fusion: score = Σ weight / (RRF_K + rank) over the rankers
  that found the note and passed it, ranks counted among the hits that passed.
  A note only the vector side found is a full result.
- Nothing passing is an answer: no hits, `abstained=True` and the reason.
- If the embedder or the vector query fails, BM25 alone answers with
  `degraded=True` and the reason. Search never fails because of an outage.
- `partial=True` while the active model's embedding backlog is not empty
  (`brain.backlog`): some notes can only be found by BM25 for now.
- Unreviewed notes: the default searches the wiki only (the review gate), but a
  wiki search also counts the raw notes that match (BM25, the same floors) and
  says so in `unreviewed_matches` and `unreviewed_hint`, so a note just written
  is never silently invisible. `include_raw=True` searches wiki and raw notes
  together, each hit showing its status.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from django.conf import settings
from django.db import connection

from brain import backlog, bm25, floors, vectors
from brain.bm25 import sections as bm25_sections
from brain.errors import SearchInputError
from brain.language import capitalises_nouns
from brain.limits import MAX_SEARCH_LIMIT
from brain.models import Note, NoteStatus, VerificationState
from brain.truth import VerificationJson, verification_of
from hyperguild.lib.embedders import Embedder, get_embedder
from observability.tracing import traced

logger = logging.getLogger(__name__)

RRF_K = 60
BM25_FANOUT = 3  # BM25 candidates per requested hit, before fusion
VECTOR_FANOUT = 4  # vector candidates per BM25 candidate (top-4N)
# BM25's candidates are reordered by their best section (`brain.bm25.sections`): at least this many are drawn, so a
# page BM25 ranks 20th on the whole of it can still come first by the section that answers.
SECTION_POOL = 50
# A candidate's order score: its best section's BM25 over the pool's best, plus this share of its whole page's
# BM25 over the pool's best (the page as a tie-breaker between sections alike). Measured on click, typer and
# pydantic (bench/RESULTS.md, issue 45): 0.1–0.5 rank the same.
SECTION_PAGE_WEIGHT = 0.25
BM25_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0
EXCERPT_CHARS = 280
MAX_LIMIT = MAX_SEARCH_LIMIT
ANY_STATUS = "any"
# How many raw matches a wiki search counts at most (BM25 only: no second embedding call per query).
UNREVIEWED_COUNT_DEPTH = 50
UNREVIEWED_NAMED = 5  # the best raw matches named in the answer (slug and title)
# With include_raw, candidates are drawn from every live status and rejected ones dropped: draw more.
INCLUDE_RAW_FANOUT = 2
# With tags, candidates without them are dropped after ranking: draw more.
TAGS_FANOUT = 4

# What `hit_rows()` reads of a note: id, slug, title, path, wing, hall, status, body, verification_state,
# verified_commit, verification_evidence (JSON, as the driver decodes it) and the successor's slug.
HitRow = tuple[int, str, str, str, str, str, str, str, str, str, Any, str | None]


class UnreviewedJson(TypedDict):
    slug: str
    title: str
    status: str


class HitJson(TypedDict):
    note_id: int
    slug: str
    title: str
    path: str
    wing: str
    hall: str
    status: str
    score: float
    excerpt: str
    rankers: dict[str, int]
    verification: VerificationJson
    superseded_by: str | None


class SearchResponseJson(TypedDict):
    """`SearchResponse.as_dict()`: `brain.presenters.QueryResult` on the wire."""

    hits: list[HitJson]
    count: int
    abstained: bool
    partial: bool
    degraded: bool
    reason: str | None
    unreviewed_matches: int
    unreviewed: list[UnreviewedJson]
    unreviewed_hint: str | None


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
    # Its anchors against the project's code (brain.truth.verification_dict) and its successor's slug, if any.
    verification: VerificationJson = field(
        default_factory=lambda: verification_of(VerificationState.UNVERIFIED, "", [])
    )
    superseded_by: str | None = None

    def as_dict(self) -> HitJson:
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
            "verification": self.verification.copy(),
            "superseded_by": self.superseded_by,
        }


@dataclass
class SearchResponse:
    hits: list[Hit]
    degraded: bool = False
    reason: str | None = None
    abstained: bool = False  # nothing passed the relevance floors: "nothing relevant" is the answer
    partial: bool = False  # the embedding backlog is not empty: vectors do not cover every note yet
    unreviewed_matches: int = 0  # raw notes that match too (counted by a wiki-only search)
    unreviewed: list[UnreviewedJson] = field(default_factory=list)  # the best of them

    @property
    def unreviewed_hint(self) -> str | None:
        return unreviewed_hint(self.unreviewed_matches)

    def as_dict(self) -> SearchResponseJson:
        return {
            "hits": [hit.as_dict() for hit in self.hits],
            "count": len(self.hits),
            "abstained": self.abstained,
            "partial": self.partial,
            "degraded": bool(self.degraded),
            "reason": self.reason,
            "unreviewed_matches": self.unreviewed_matches,
            "unreviewed": list(self.unreviewed),
            "unreviewed_hint": self.unreviewed_hint,
        }


def unreviewed_hint(count: int) -> str | None:
    """What to tell a user whose wiki search left out `count` matching raw notes; None when none did."""
    if not count:
        return None
    more = "+" if count >= UNREVIEWED_COUNT_DEPTH else ""
    notes = "note also matches" if count == 1 else "notes also match"
    return (
        f"{count}{more} unreviewed (raw) {notes}; they are not in the wiki until a person reviews them. "
        "See them with brain_query include_raw=true (or status='raw'), or in the review queue at /review/."
    )


def unreviewed_ids(query: str, tags: list[str] | None = None, bm25_pass: bm25.QueryScores | None = None) -> list[int]:
    """The raw notes that match `query`, best first (at most UNREVIEWED_COUNT_DEPTH).

    BM25 and its floors; raw notes have no wing or hall yet, so those filters do not apply.
    `bm25_pass`: the wiki search's pass over the postings, reused rather than scored again.
    """
    ranking = rank_notes(
        query, depth=UNREVIEWED_COUNT_DEPTH, status=NoteStatus.RAW, rankers=("bm25",), bm25_pass=bm25_pass
    )
    ids = [note_id for note_id, _, _ in ranking.fused]
    if tags:
        tagged = set(Note.objects.filter(id__in=ids).with_tags(tags).values_list("id", flat=True))
        ids = [note_id for note_id in ids if note_id in tagged]
    return ids


def named_unreviewed(ids: list[int], rows: Mapping[int, HitRow]) -> list[UnreviewedJson]:
    """The best UNREVIEWED_NAMED of `ids` still raw, as {slug, title, status}, from `hit_rows()`' rows."""
    return [
        {"slug": rows[i][1], "title": rows[i][2], "status": rows[i][6]}
        for i in ids[:UNREVIEWED_NAMED]
        if i in rows and rows[i][6] == NoteStatus.RAW
    ]


@traced("brain.search")
def search(
    query: str,
    *,
    limit: int = 10,
    wing: str | None = None,
    hall: str | None = None,
    status: str | None = NoteStatus.WIKI,
    include_raw: bool = False,
    tags: list[str] | None = None,
    include_superseded: bool = False,
    vector_veto: bool = True,
) -> SearchResponse:
    """Ranked notes for `query`. `status` None or "any" means every status but archived.

    `vector_veto` False: a BM25 hit is never dropped for a low vector similarity (`rank_notes`); brain_answer's
    candidates, which its own gates judge.

    Superseded notes are left out unless `include_superseded` (they keep their history; brain_get reads them).

    `include_raw` with the wiki status: wiki and raw notes ranked together (never rejected ones).
    A wiki-only search counts the raw notes it left out (`unreviewed_matches`). `tags`: only notes
    whose frontmatter `tags` holds every one of them.
    """
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
    with_raw = include_raw and status == NoteStatus.WIKI
    hidden: frozenset[int] = frozenset() if include_superseded else superseded_ids()
    if with_raw or tags:
        depth = limit * BM25_FANOUT * (INCLUDE_RAW_FANOUT if with_raw else 1) * (TAGS_FANOUT if tags else 1)
        ranking = rank_notes(
            query,
            depth=depth,
            wing=wing,
            hall=hall,
            status=None if with_raw else status,
            vector_veto=vector_veto,
        )
        fused = [item for item in ranking.fused if item[0] not in hidden]
        if tags:
            tagged = set(
                Note.objects.filter(id__in=[i for i, _, _ in fused]).with_tags(tags).values_list("id", flat=True)
            )
            fused = [item for item in fused if item[0] in tagged]
        statuses = (NoteStatus.WIKI, NoteStatus.RAW) if with_raw else None
        hits = _hits(fused, tokens, ranking.passages, statuses=statuses, limit=limit)
        raw_ids = unreviewed_ids(query, tags, ranking.bm25_pass) if status == NoteStatus.WIKI and not with_raw else []
        named = named_unreviewed(raw_ids, hit_rows(raw_ids[:UNREVIEWED_NAMED]))
    else:
        ranking = rank_notes(
            query, depth=limit * BM25_FANOUT, wing=wing, hall=hall, status=status, vector_veto=vector_veto
        )
        # A wiki search also counts and names the raw notes it leaves out, from the same pass over the
        # postings and with one query for the rows of both.
        raw_ids = unreviewed_ids(query, tags, ranking.bm25_pass) if status == NoteStatus.WIKI else []
        fused = [item for item in ranking.fused if item[0] not in hidden][:limit]
        rows = hit_rows([note_id for note_id, _, _ in fused] + raw_ids[:UNREVIEWED_NAMED])
        hits = _hits(fused, tokens, ranking.passages, rows=rows)
        named = named_unreviewed(raw_ids, rows)
    unreviewed = len(raw_ids)
    reasons = [ranking.reason] if ranking.reason else []
    if not hits:
        reasons.append(ranking.abstain_reason or "Nothing relevant: no note matches the query.")
        hint = unreviewed_hint(unreviewed)  # None when no raw note matched
        if hint:
            reasons.append(hint)
    return SearchResponse(
        hits=hits,
        degraded=ranking.degraded,
        reason="; ".join(reasons) or None,
        abstained=not hits,
        partial=ranking.used_vectors is not None and backlog.is_partial(ranking.used_vectors),
        unreviewed_matches=unreviewed,
        unreviewed=named,
    )


@dataclass
class Ranking:
    fused: list[tuple[int, float, dict[str, int]]]  # (note id, score, {ranker: rank}) best first
    passages: dict[int, str]  # note id → its best chunk, from the vector side
    degraded: bool = False
    reason: str | None = None
    # {ranker: (candidates it returned, candidates that passed its floor)}
    passed: dict[str, tuple[int, int]] = field(default_factory=dict)
    abstain_reason: str | None = None  # set when candidates existed but none passed
    used_vectors: str | None = None  # the embedder key the vector side used, if it ran
    bm25_pass: bm25.QueryScores | None = None  # the BM25 side's pass over the postings, for another filter


def rank_notes(
    query: str,
    *,
    depth: int,
    wing: str | None = None,
    hall: str | None = None,
    status: str | None = None,
    rankers: tuple[str, ...] = ("bm25", "vector"),
    embedder: Embedder | None = None,
    floor: floors.Floors | None = None,
    bm25_pass: bm25.QueryScores | None = None,
    sections: bool = True,
    vector_veto: bool = True,
) -> Ranking:
    """BM25 top-`depth` and (embedder on) vector top-`depth`·VECTOR_FANOUT, cut at their floors, fused.

    `floor` None applies the configured floors (`brain.floors.current`); `floors.NO_FLOORS`
    switches them off (brain_eval compares both). `search()` is this cut to `limit` plus
    the note fields; `brain_eval` calls it with one ranker at a time and a depth of 100.
    `sections` False keeps BM25's order by whole notes (no reordering by their best section).
    `vector_veto` False keeps every BM25 hit that passed BM25's own floors whatever its vector similarity (no
    support or agree floor), and lets the vectors rank it: brain_answer's candidates. Its gates (a name no note
    mentions, the distinctive passage) decide whether anything answers, and the agree floor, calibrated on
    SciFact's abstracts, dropped the right page of a project's docs (typer: "pop up the file browser", BM25's
    first at similarity 0.854 under an agree floor of 0.86 with the brain's shift, holding 36 % of the query where
    a hit the vectors do not back needs 40 %).
    """
    use_vectors = "vector" in rankers and (embedder is not None or vectors.active())
    if use_vectors and embedder is None:
        embedder = get_embedder()
        use_vectors = embedder is not None
    if floor is None:
        floor = floors.current(embedder.key if use_vectors and embedder else None)
    if not vector_veto and floor.agree is not None:
        floor = replace(floor, agree=-1.0, support=None)

    rankings: dict[str, list[int]] = {}
    passed: dict[str, tuple[int, int]] = {}
    bm25_scores: dict[int, float] = {}
    shares: dict[int, float] = {}
    if "bm25" in rankers:
        index = bm25.current_index()
        tokens = bm25.tokenize(query)
        wants_shares = floor.bm25 > 0 or floor.bm25_alone > 0 or floor.evidence
        if not settings.BRAIN_BM25_PRUNING:
            # Exhaustive: one pass over every posting, reused by the raw-note count of a wiki search.
            bm25_pass = index.score(tokens, shares=wants_shares, reuse=bm25_pass)
        pool = max(depth, SECTION_POOL) if sections else depth
        bm25_ranking, shares, matched = index.rank_with_evidence(
            tokens, limit=pool, wing=wing, hall=hall, status=status, shares=wants_shares, scored=bm25_pass
        )
        if wants_shares and bm25_ranking:
            unseen = sum(1 for token in set(tokens) if index.term_info(token)[1] == 0) if floor.evidence else 0
            kept = [
                (note_id, score)
                for note_id, score in bm25_ranking
                if shares[note_id] >= floor.bm25 and floor.enough_terms(matched[note_id], unseen)
            ]
            if unseen and any(matched[note_id] == 1 for note_id, _ in kept):
                # One shared stem beside a word no note holds: the note must hold the query's word itself.
                lone = {note_id for note_id, _ in kept if matched[note_id] == 1}
                holding = notes_holding_words(lone, seen_words(query, index))
                kept = [(note_id, score) for note_id, score in kept if note_id not in lone or note_id in holding]
        else:
            kept = bm25_ranking
        if sections:
            kept = by_best_section(index, tokens, kept)
        bm25_ranking, kept = bm25_ranking[:depth], kept[:depth]
        passed["bm25"] = (len(bm25_ranking), len(kept))
        rankings["bm25"] = [note_id for note_id, _ in kept]
        bm25_scores = dict(kept)
    passages: dict[int, str] = {}
    degraded, reason = False, None

    if use_vectors:
        assert embedder is not None  # use_vectors stays True only with an embedder
        vector_depth = depth * VECTOR_FANOUT if "bm25" in rankers else depth
        try:
            query_vector = embedder.embed_query(query)
            vector_ranking = vectors.rank_scored(
                query,
                limit=vector_depth,
                wing=wing,
                hall=hall,
                status=status,
                embedder=embedder,
                vector=query_vector,
            )
            checks_bm25 = floor.support is not None or floor.agree is not None
            similarity: Mapping[int, float] = {}
            if checks_bm25 and rankings.get("bm25"):
                similarity = vectors.similarities(embedder.key, query_vector, rankings["bm25"])
        except Exception as exc:  # noqa: BLE001 — an outage lowers quality, it never fails the query
            logger.warning("vector search failed, answering from BM25: %s", exc)
            degraded, reason = True, f"vector search unavailable: {exc}"
            use_vectors = False
        else:
            found_by_bm25 = set(rankings.get("bm25", ()))  # passed the share floor, before the checks below
            if checks_bm25 and "bm25" in rankings:
                # Words can match by accident: a BM25 hit whose meaning is far from the query, or that the
                # vectors do not back and that matches little of the query, does not stand (brain.floors).
                rankings["bm25"] = [
                    i for i in rankings["bm25"] if floor.bm25_passes(shares.get(i, 1.0), similarity.get(i))
                ]
                found, _ = passed["bm25"]
                passed["bm25"] = (found, len(rankings["bm25"]))
                bm25_scores = {i: bm25_scores[i] for i in rankings["bm25"]}
            if floor.vector is not None:
                kept_vectors = [row for row in vector_ranking if floor.vector_passes(row[2], row[0] in found_by_bm25)]
            elif "bm25" in rankers:
                # No calibrated floor for this model: its ranks may reorder BM25's hits, never add to them.
                allowed = set(rankings["bm25"])
                kept_vectors = [row for row in vector_ranking if row[0] in allowed]
            else:
                kept_vectors = vector_ranking
            passed["vector"] = (len(vector_ranking), len(kept_vectors))
            rankings["vector"] = [note_id for note_id, _, _ in kept_vectors]
            passages = {note_id: text for note_id, text, _ in kept_vectors}

    fused = fuse(rankings, {"bm25": BM25_WEIGHT, "vector": VECTOR_WEIGHT})
    if "vector" not in rankings:
        # BM25 alone: report the BM25 score itself, more telling than 1/(k+rank).
        fused = [(note_id, bm25_scores[note_id], ranks) for note_id, _, ranks in fused]
    abstain_reason = None
    unknown = unknown_identifiers(query, bm25.current_index()) if fused and floor.evidence else []
    if unknown:
        # The question asks about a piece of code by name (`add_subparsers`, `yaml.safe_load`) that no note ever
        # mentions: what a note shares with it is the question's other words, not its subject.
        fused, abstain_reason = (
            [],
            (
                f"Nothing relevant: no note mentions {', '.join(f'`{name}`' for name in unknown[:3])}, which the question names."
            ),
        )
    elif not fused and any(found for found, _ in passed.values()):
        abstain_reason = (
            "Nothing relevant: no candidate passed the relevance floors ("
            + floor.describe(embedder.key if use_vectors and embedder else None)
            + ")."
        )
    return Ranking(
        fused=fused,
        passages=passages,
        degraded=degraded,
        reason=reason,
        passed=passed,
        abstain_reason=abstain_reason,
        used_vectors=embedder.key if use_vectors and embedder else None,
        bm25_pass=bm25_pass,
    )


def by_best_section(
    index: bm25.Snapshot, tokens: list[str], ranking: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """BM25's (note id, score) best first, reordered by best section (`brain.bm25.sections`): each note's score
    becomes its best section's share of the best one here plus SECTION_PAGE_WEIGHT × its page's share of the
    best page score here. Ties keep BM25's order."""
    if len(ranking) < 2:
        return ranking
    parts = note_sections([note_id for note_id, _ in ranking])
    best_sections = bm25_sections.section_scores(index, tokens, parts)
    top_section = max(best_sections.values(), default=0.0) or 1.0
    top_page = max(score for _, score in ranking) or 1.0
    combined = [
        (note_id, best_sections.get(note_id, 0.0) / top_section + SECTION_PAGE_WEIGHT * score / top_page)
        for note_id, score in ranking
    ]
    order = sorted(range(len(combined)), key=lambda i: (-combined[i][1], i))
    return [combined[i] for i in order]


def note_sections(note_ids: list[int]) -> dict[int, list[tuple[Counter[str], int]]]:
    """Each note's sections' term counts (`brain.bm25.sections.note_sections`), from the cache where its content
    hash is known there; the others' title and body read in one query."""
    found: dict[int, list[tuple[Counter[str], int]]] = {}
    hashes = dict(Note.objects.filter(id__in=note_ids).values_list("id", "content_hash"))
    missing = []
    for note_id in note_ids:
        content_hash = hashes.get(note_id)
        cached = bm25_sections.cached_sections(note_id, content_hash) if content_hash else None
        if cached is None:
            missing.append(note_id)
        else:
            found[note_id] = cached
    for note_id, title, body in Note.objects.filter(id__in=missing).values_list("id", "title", "body"):
        found[note_id] = bm25_sections.note_sections(title, body)
        if hashes.get(note_id):
            bm25_sections.remember_sections(note_id, hashes[note_id], found[note_id])
    return found


# A code identifier: words joined by `_` or `.` (`add_subparsers`, `yaml.safe_load`, `os.path`). Only these: names
# in prose (a gene in a SciFact claim, `Dockerfile`) may be absent from every note the query is answered by, and a
# rule on them cost SciFact 0.036 nDCG@10 (bench/RESULTS.md, issue 45).
_IDENTIFIER_RE = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?=[\s,;:?!)]|\.?$)")


# A name inside a sentence (`unknown_names`): a capitalised word that does not open it ("Celery", "Dockerfile",
# "PyYAML"), or a camel-case one ("macOS"). All-capital words are left out: an acronym ("OS", "TLS") is often
# spelled out in a project's docs ("operating system").
_NAME_RE = re.compile(r"(?<![\w.'’-])(?:[A-Z][a-z0-9]+[A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*)(?![\w'’-])")
_SENTENCE_RE = re.compile(r"(?<=[.?!;:])\s+")
# In a language that capitalises every noun (`brain.language`), only a capital inside a word or a digit marks a name.
_INNER_CAPITAL_RE = re.compile(r".[A-Z]|\d")


def unknown_identifiers(query: str, index: bm25.Snapshot) -> list[str]:
    """The code identifiers the query names (`_IDENTIFIER_RE`, with a `_` or `.` inside) none of whose words any note holds."""
    names = []
    for match in _IDENTIFIER_RE.finditer(query):
        name = match.group(0)
        if "_" not in name.strip("_") and "." not in name:
            continue
        tokens = bm25.word_tokens(name)
        if tokens and not any(index.term_info(token)[1] for token in tokens):
            names.append(name)
    return names


def question_names(query: str) -> list[str]:
    """The names inside the query's sentences (`_NAME_RE`: "Celery", "Dockerfile", "PyYAML", "Australia"), each
    once; not a sentence's first word. In a question in German, only a word with a capital inside it or a digit
    is a name (`brain.language.NOUN_CAPITALISING`)."""
    names: list[str] = []
    nouns_capitalised = capitalises_nouns(query)
    for sentence in _SENTENCE_RE.split(query.strip()):
        for match in _NAME_RE.finditer(sentence):
            name = match.group(0)
            if match.start() == 0 or name in names:
                continue
            if nouns_capitalised and not _INNER_CAPITAL_RE.search(name):
                continue  # a German noun, not a name
            names.append(name)
    return names


def unknown_names(query: str, index: bm25.Snapshot) -> list[str]:
    """The names the query names (`question_names`) that no note holds. brain_answer does not answer a question
    naming a thing the brain never mentions (search still lists what matched its other words: a science claim
    naming a gene by a variant spelling keeps its hits)."""
    names: list[str] = []
    for name in question_names(query):
        tokens = bm25.word_tokens(name)
        if tokens and not any(index.term_info(token)[1] for token in tokens):
            names.append(name)
    return names


def seen_words(query: str, index: bm25.Snapshot) -> set[str]:
    """The query's own words (lowercased, no stopwords) whose stem some note holds."""
    words = bm25.WORD_RE.findall(query.lower())
    return {
        word
        for word in words
        if word not in bm25.STOPWORDS and any(index.term_info(t)[1] for t in bm25.word_tokens(word))
    }


def notes_holding_words(note_ids: set[int], words: set[str]) -> set[int]:
    """Those of `note_ids` whose title or body holds one of `words` as a whole word (not only its stem:
    "capitalization" does not hold "capital")."""
    if not note_ids or not words:
        return set()
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")\b", re.IGNORECASE)
    rows = Note.objects.filter(id__in=note_ids).values_list("id", "title", "body")
    return {note_id for note_id, title, body in rows if pattern.search(title) or pattern.search(body)}


def fuse(rankings: dict[str, list[int]], weights: dict[str, float]) -> list[tuple[int, float, dict[str, int]]]:
    """Reciprocal Rank Fusion of best-first id lists → (id, score, {ranker: rank}) best first.

    Equal scores (BM25's first as the vectors' second, and the other way round) go to the note BM25 ranks
    higher: its words are the more exact witness (click's "prompt only when the flag is given without a value"
    is `prompt_required`, on the page BM25 put first), then to the better rank either ranker gave it."""
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for name, ids in rankings.items():
        for rank, note_id in enumerate(ids, start=1):
            scores[note_id] = scores.get(note_id, 0.0) + weights.get(name, 1.0) / (RRF_K + rank)
            ranks.setdefault(note_id, {})[name] = rank
    unranked = len(scores) + 1
    order = sorted(scores, key=lambda i: (-scores[i], ranks[i].get("bm25", unranked), min(ranks[i].values()), i))
    return [(i, scores[i], ranks[i]) for i in order]


# The superseded notes as of one BM25 snapshot (a snapshot is one corpus version). Superseding a note (and undoing
# it) writes the note, which bumps the corpus version and so makes a new snapshot: the set is as fresh as the
# snapshot a query ranks against (this process's own writes at once, other processes' within
# BRAIN_BM25_CHECK_SECONDS). Without it every query paid one more round trip to the database (about a fifth of a
# search's CPU at 100,000 notes).
_superseded: tuple[bm25.Snapshot, frozenset[int]] | None = None
_superseded_lock = threading.Lock()


def superseded_ids() -> frozenset[int]:
    """Ids of the notes someone superseded: out of default search (a short list, read once per corpus version)."""
    global _superseded
    snapshot = bm25.current_index()
    cached = _superseded
    if cached is not None and cached[0] is snapshot:
        return cached[1]
    ids = frozenset(Note.objects.filter(superseded_by__isnull=False).values_list("id", flat=True))
    with _superseded_lock:
        _superseded = (snapshot, ids)
    return ids


def hit_rows(ids: list[int]) -> Mapping[int, HitRow]:
    """id → (id, slug, title, path, wing, hall, status, body): only the columns a hit shows
    (no JSON fields to decode, no model instances; this is brain_query's hot path)."""
    if not ids:
        return {}
    # Plain SQL: building this query through the ORM cost more than running it.
    table = connection.ops.quote_name(Note._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT n.id, n.slug, n.title, n.path, n.wing, n.hall, n.status, n.body, n.verification_state, "  # noqa: S608
            f"n.verified_commit, n.verification_evidence, s.slug FROM {table} n "
            f"LEFT JOIN {table} s ON s.id = n.superseded_by_id WHERE n.id = ANY(%s)",
            [list(ids)],
        )
        return {row[0]: row for row in cursor.fetchall()}


def _hits(
    fused: list[tuple[int, float, dict[str, int]]],
    tokens: list[str],
    passages: dict[int, str],
    *,
    statuses: tuple[str, ...] | None = None,
    limit: int | None = None,
    rows: Mapping[int, HitRow] | None = None,
) -> list[Hit]:
    """The fused ids as hits (archived ones dropped); `statuses` keeps only those, `limit` stops early.
    `rows`: `hit_rows()` of those ids (and maybe more), fetched already."""
    if rows is None:
        rows = hit_rows([note_id for note_id, _, _ in fused])
    hits: list[Hit] = []
    for note_id, score, ranks in fused:
        if limit is not None and len(hits) >= limit:
            break
        row = rows.get(note_id)
        if row is None or row[6] == NoteStatus.ARCHIVED:  # changed since the index was built
            continue
        if statuses is not None and row[6] not in statuses:
            continue
        _, slug, title, path, wing, hall, status, body, state, commit, evidence, successor = row
        if isinstance(evidence, str):
            evidence = json.loads(evidence)
        hits.append(
            Hit(
                note_id=note_id,
                slug=slug,
                title=title,
                path=path,
                wing=wing,
                hall=hall,
                status=status,
                score=float(score),
                excerpt=excerpt(body, tokens, fallback=passages.get(note_id)),
                rankers=ranks,
                verification=verification_of(state, commit, evidence or []),
                superseded_by=successor,
            )
        )
    return hits


PASSAGE_SPLIT_RE = re.compile(r"\n\s*\n")


def excerpt(body: str, tokens: list[str], *, fallback: str | None = None, size: int = EXCERPT_CHARS) -> str:
    """The passage of `body` holding the most distinct query terms, cut to about `size` characters
    around its first match. With no term in the body, the vector side's best chunk (or the start)."""
    wanted = set(tokens)
    passages = PASSAGE_SPLIT_RE.split(body)
    # Most notes hit by a query are one passage: skip tokenising it whole (the hot path of
    # brain_query; the word loop below finds the match, or proves there is none).
    best, best_hits = (passages[0], 1) if len(passages) == 1 else ("", 0)
    if len(passages) > 1:
        for passage in passages:
            hits = _distinct_terms_found(passage, wanted)
            if hits > best_hits:
                best, best_hits = passage, hits
    if not best_hits:
        return _clip(fallback or body, 0, size)
    # Centre the window on the first matching word.
    for match in _candidate_words(best, wanted):
        word_tokens = bm25.word_tokens(match.group())
        if word_tokens and word_tokens[0] in wanted:
            return _clip(best, max(0, match.start() - size // 4), size)
    # No word matched. In ASCII text the loop saw every word that could (a note found by its
    # title alone); other text is tokenised whole, as the index did, before giving up on it.
    if len(passages) == 1 and (best.isascii() or not wanted.intersection(bm25.tokenize(best))):
        return _clip(fallback or body, 0, size)
    return _clip(best, 0, size)


def _distinct_terms_found(text: str, wanted: set[str]) -> int:
    """How many of the `wanted` terms `text` contains (as `len(wanted & set(tokenize(text)))`)."""
    if not text.isascii():
        return len(wanted.intersection(bm25.tokenize(text)))
    found: set[str] = set()
    for match in _candidate_words(text, wanted):  # in ASCII text: every word that may be a wanted term
        found.update(bm25.word_tokens(match.group()))
    return len(found & wanted)


def _candidate_words(text: str, wanted: set[str]) -> Iterator[re.Match[str]]:
    """The words of `text` that may tokenise to a wanted term, in order.

    In ASCII text a word's stem starts with the word's own first letter, lowercased (the
    stemmer's irregular forms too: dying → die, skies → sky), so only words starting with
    a wanted term's first letter can match, and the regex engine skips the rest. Other
    text (NFKC may change a letter, CJK splits words) gets every word.
    """
    initials = {term[0] for term in wanted if term}
    if not text.isascii() or not initials or not all(c.isascii() and c.isalnum() for c in initials):
        return bm25.WORD_RE.finditer(text)
    letters = "".join(sorted(initials | {c.upper() for c in initials}))
    return re.finditer(rf"(?<!\w)[{letters}]\w*", text)


def _clip(text: str, start: int, size: int) -> str:
    text = text.strip()
    piece = " ".join(text[start : start + size].split())
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + size < len(text) else ""
    return f"{prefix}{piece}{suffix}"
