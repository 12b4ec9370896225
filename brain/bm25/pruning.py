"""Dynamic pruning for top-k: block-max MaxScore over a snapshot's parts, the same top-k as scoring every posting.

Scoring every posting of every query term (`Snapshot.score()`) costs as many postings as the
terms have: at 1,000,000 notes a common term has hundreds of thousands. A note can only enter
the top `limit` if its score can reach the `limit`-th best score found so far (θ). Each
segment's documents are cut into blocks of BLOCK_DOCS positions, and for each block an upper
bound of any document's score there is the sum, over the query's terms, of the term's
largest contribution in that block:

- a long list (LONG_POSTINGS postings or more) keeps that maximum in `Segment.block_max`,
  computed at build time with the segment's own average length; with the snapshot's average
  length `a` and the segment's `r`, the length term `k1·(1 − b + b·dl/a)` is at least
  `min(1, r/a)` times the one used at build, so the stored figure times `max(1, a/r)` (and the
  term's idf now) still bounds the contribution;
- a short list is scored whole at once (it is cheap), and its exact per-block maxima are used.

Blocks are visited best bound first, a growing batch at a time; each batch is scored exactly
(all query terms, only their postings inside those blocks) and θ updated; a block whose bound
is below θ cannot hold a note of the top `limit` and is skipped with its postings. Ties: a block
whose bound equals θ is still scored, so a note tied with the `limit`-th one competes on its
note id as in the exhaustive ranking. Each document's score is the same sum in the same order
as `Snapshot.score()`'s (contributions added term by term in query order), so the scores are
identical, not merely close. Small parts (the middle and delta segments) are scored whole.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

import numpy as np

from brain.bm25.counters import stats
from brain.bm25.okapi import K1
from brain.bm25.segments import BLOCK_DOCS, BLOCK_SHIFT, Segment

FIRST_BATCH_BLOCKS = 4  # blocks scored before θ is first looked at; each later batch is twice as large
SEED_BATCHES = 3  # batches of best-bound blocks scored whole for θ before the rest goes to MaxScore (MaxScore
# keeps the θ it starts with: at 1M a single common word scored 85 % of its postings after 2 batches, 4 % after 3)
MAX_BATCH_BLOCKS = 256
SMALL_PART_DOCS = 4 * BLOCK_DOCS  # parts no larger than this are scored whole
# A part whose query terms have at most this many postings per block (and at most WHOLE_POSTINGS_MAX) is scored
# whole, every posting once: the block bounds, the batches and MaxScore cost a fixed ~0.3-0.5 ms of numpy calls
# per part, more than they save on few postings. Measured with SyntheticCorpus(seed=11) queries
# (bench/bm25_pruning.py): at 100,000 notes the blocks pay from ~200 postings a block (~20,000), at 1,000,000
# from ~50,000 postings (a common term there becomes non-essential in MaxScore and is only looked up).
WHOLE_POSTINGS_PER_BLOCK = 192
WHOLE_POSTINGS_MAX = 48_000
# Relative slack on a block's bound: float sums of the same terms in another order may differ in the last bits.
BOUND_MARGIN = 1e-9
FILTERS = (("status_codes", "status"), ("wing_codes", "wing"), ("hall_codes", "hall"))


class Ranked(Protocol):
    """What pruned_rank reads of a `brain.bm25.snapshot.Snapshot` (named here: snapshot imports this module)."""

    parts: list[Segment]
    alives: list[np.ndarray | None]
    avgdl: float

    def term_info(self, token: str) -> tuple[tuple[int, ...], int, float]: ...

    def length_norms(self) -> list[np.ndarray]: ...


Terms = list[tuple[int, float]]  # (term id in a part, idf) per query token occurrence
Codes = list[tuple[str, int]]  # (a Segment's codes attribute, the filter's code there)


class TopK:
    """The best `limit` candidates seen so far: score descending, then note id ascending."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ids = np.zeros(0, dtype=np.int64)
        self.scores = np.zeros(0, dtype=np.float64)

    def add(self, ids: np.ndarray, scores: np.ndarray) -> None:
        threshold = self.threshold
        if threshold is not None:  # below θ: can never enter (equal to it: may, on its note id)
            keep: np.ndarray = scores >= threshold
            ids, scores = ids[keep], scores[keep]
        if not len(ids):
            return
        ids, scores = np.concatenate([self.ids, ids]), np.concatenate([self.scores, scores])
        if len(ids) > self.limit:
            # Everything scoring at least the limit-th best (ties at the cut all compete), then the exact order.
            cut = np.partition(scores, len(ids) - self.limit)[len(ids) - self.limit]
            near = np.flatnonzero(scores >= cut)
            keep = near[np.lexsort((ids[near], -scores[near]))[: self.limit]]
            ids, scores = ids[keep], scores[keep]
        self.ids, self.scores = ids, scores

    @property
    def threshold(self) -> float | None:
        """θ: the `limit`-th best score, once there are `limit` candidates."""
        return float(self.scores.min()) if len(self.ids) >= self.limit else None

    def ranking(self) -> list[tuple[int, float]]:
        order = np.lexsort((self.ids, -self.scores))
        return [(int(self.ids[i]), float(self.scores[i])) for i in order]


def pruned_rank(
    snapshot: Ranked, query_tokens: list[str], *, limit: int, filters: dict[str, str | None]
) -> list[tuple[int, float]]:
    """The (note id, score) of the best `limit` live notes matching a token, as `Snapshot.rank()` without shares."""
    infos = {}
    occurrences = []  # per query token, in order (a repeated token counts again): (term id per part, idf)
    for token in query_tokens:
        if token not in infos:
            infos[token] = snapshot.term_info(token)
        ids, _df, idf = infos[token]
        occurrences.append((ids, idf))
    top = TopK(limit)
    norms = snapshot.length_norms()
    # The small parts first: their candidates give a first θ before the base's blocks are visited.
    parts = sorted(range(len(snapshot.parts)), key=lambda index: len(snapshot.parts[index]))
    for index in parts:
        seg = snapshot.parts[index]
        terms = [(ids[index], idf) for ids, idf in occurrences if ids[index] >= 0]
        if not terms or not len(seg):
            continue
        codes: Codes = []
        for codes_name, name in FILTERS:
            wanted = filters.get(name)
            if wanted is not None:
                codes.append((codes_name, seg.code(wanted)))
        total = sum(int(seg.offsets[t + 1] - seg.offsets[t]) for t in dict.fromkeys(t for t, _ in terms))
        if any(code < 0 for _, code in codes):  # no document of this part has that label
            stats.postings_skipped += total
            continue
        alive = snapshot.alives[index]
        if len(seg) <= SMALL_PART_DOCS or total <= min(WHOLE_POSTINGS_PER_BLOCK * seg.blocks, WHOLE_POSTINGS_MAX):
            # Few postings for this part's size: scoring them all costs less than bounding and visiting blocks.
            scored = _score_whole(seg, norms[index], terms, alive, codes, top)
            stats.whole_large_parts += len(seg) > SMALL_PART_DOCS
        else:
            scored = _score_blocks(seg, norms[index], terms, alive, codes, top, snapshot.avgdl)
        stats.postings_scored += scored
        stats.postings_skipped += total - scored
    stats.pruned_queries += 1
    return top.ranking()


def _eligible(seg: Segment, docs: np.ndarray, alive: np.ndarray | None, codes: list[tuple[str, int]]) -> np.ndarray:
    keep = np.ones(len(docs), dtype=bool) if alive is None else alive[docs]
    for codes_name, code in codes:
        keep &= getattr(seg, codes_name)[docs] == code
    return keep


def _contribution(norms: np.ndarray, idf: float, docs: np.ndarray, tfs: np.ndarray) -> np.ndarray:
    tf = tfs.astype(np.float64)
    # rank-bm25's expression, term for term, as in Snapshot.score(): the same floats.
    return idf * (tf * (K1 + 1) / (tf + norms[docs]))


def _places(arrays: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct values of `arrays` (each ascending and distinct: a term's postings), ascending, and where each
    array's values are among them. One stable sort of the concatenation (timsort merges the sorted runs) rather
    than np.unique (a hash, then a sort) and a binary search per value."""
    if len(arrays) == 1:
        return arrays[0], [np.arange(len(arrays[0]))]
    every = np.concatenate(arrays)
    order = np.argsort(every, kind="stable")
    ranked = every[order]
    fresh = np.empty(len(ranked), dtype=bool)
    fresh[:1] = True
    np.not_equal(ranked[1:], ranked[:-1], out=fresh[1:])
    positions = np.empty(len(every), dtype=np.int64)
    positions[order] = np.cumsum(fresh) - 1
    bounds = np.cumsum([0] + [len(values) for values in arrays])
    return ranked[fresh], [positions[bounds[i] : bounds[i + 1]] for i in range(len(arrays))]


def _score_whole(
    seg: Segment, norms: np.ndarray, terms: Terms, alive: np.ndarray | None, codes: Codes, top: TopK
) -> int:
    """Score every posting of `terms` in `seg`, in arrays the size of the postings (not of the segment: allocating
    and clearing per-document arrays on every query costs more than the scoring at 100,000 notes and up)."""
    computed: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # per distinct term (a term has one idf per query)
    scored = 0
    for term, idf in terms:
        if term not in computed:
            start, end = seg.offsets[term], seg.offsets[term + 1]
            docs = seg.post_docs[start:end]
            computed[term] = (docs, _contribution(norms, idf, docs, seg.post_tfs[start:end]))
            scored += int(end - start)
    candidates, places = _places([docs for docs, _ in computed.values()])
    slots = dict(zip(computed, places, strict=True))
    scores = np.zeros(len(candidates), dtype=np.float64)
    for term, _idf in terms:
        # Each term's contributions added in query order onto 0.0, as Snapshot.score() adds them: the same floats.
        scores[slots[term]] += computed[term][1]
    keep = _eligible(seg, candidates, alive, codes)
    top.add(seg.note_ids[candidates[keep]], scores[keep])
    return scored


def _score_blocks(
    seg: Segment, norms: np.ndarray, terms: Terms, alive: np.ndarray | None, codes: Codes, top: TopK, avgdl: float
) -> int:
    blocks = seg.blocks
    bound = np.zeros(blocks, dtype=np.float64)
    has = np.zeros(blocks, dtype=bool)
    scale = max(1.0, avgdl / seg.reference_avgdl)
    term_bounds: dict[int, np.ndarray] = {}  # per term: per block, a bound of its contribution (all its occurrences)
    short: dict[int, np.ndarray] = {}  # a short list's exact per-block maximum (its idf included)
    for term, idf in terms:
        row = seg.block_row(term)
        if row >= 0:
            stored = seg.block_max[row]
            occurrence = (idf * scale) * stored.astype(np.float64)
            has |= stored > 0
        else:
            if term not in short:
                start, end = seg.offsets[term], seg.offsets[term + 1]
                docs = seg.post_docs[start:end]
                part = _contribution(norms, idf, docs, seg.post_tfs[start:end])
                block_of = docs >> BLOCK_SHIFT
                firsts = np.flatnonzero(np.concatenate(([True], block_of[1:] != block_of[:-1])))
                maxima = np.zeros(blocks, dtype=np.float64)
                maxima[block_of[firsts]] = np.maximum.reduceat(part, firsts)
                has[block_of[firsts]] = True
                short[term] = maxima
            occurrence = short[term]
        bound += occurrence
        term_bounds[term] = term_bounds[term] + occurrence if term in term_bounds else occurrence
    for codes_name, code in codes:
        has &= seg.blocks_with(codes_name, code)
    bound *= 1 + BOUND_MARGIN
    candidates = np.flatnonzero(has)
    order = candidates[np.argsort(-bound[candidates], kind="stable")]
    distinct = list(term_bounds)
    scored, position, size, batches = 0, 0, FIRST_BATCH_BLOCKS, 0
    # The blocks with the best bounds first, scored whole: their notes give θ.
    while position < len(order):
        threshold = top.threshold
        if threshold is not None and bound[order[position]] < threshold:
            return scored  # every block left has a bound below θ: none of its notes can enter the top
        if threshold is not None and batches >= SEED_BATCHES:
            break
        take = order[position : position + size]
        position += len(take)
        size = min(size * 2, MAX_BATCH_BLOCKS)
        if threshold is not None:
            take = take[bound[take] >= threshold]
        scored += _score_selected(seg, norms, terms, distinct, np.sort(take), alive, codes, top)
        batches += 1
    else:
        return scored
    rest = order[position:]
    assert threshold is not None  # the loop leaves by `break` only once θ is set (and θ is top.threshold)
    rest = np.sort(rest[bound[rest] >= threshold])
    return scored + _maxscore(seg, norms, terms, term_bounds, rest, alive, codes, top)


def _gather(seg: Segment, term: int, take: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The docs and tfs of `term`'s postings inside blocks `take` (ascending): in document order."""
    start, end = seg.offsets[term], seg.offsets[term + 1]
    term_docs = seg.post_docs[start:end]
    low = np.searchsorted(term_docs, take << BLOCK_SHIFT)
    high = np.searchsorted(term_docs, (take + 1) << BLOCK_SHIFT)
    counts = high - low
    total = int(counts.sum())
    # The postings of each block, one after the other: position low[i] + j for j < counts[i].
    index = np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(total)
    return term_docs[index], seg.post_tfs[start:end][index]


def _maxscore(
    seg: Segment,
    norms: np.ndarray,
    terms: Terms,
    term_bounds: dict[int, np.ndarray],
    rest: np.ndarray,
    alive: np.ndarray | None,
    codes: Codes,
    top: TopK,
) -> int:
    """MaxScore over blocks `rest`: the terms whose bounds there sum below θ are non-essential, as a note holding
    only those cannot reach θ. The essential terms' postings give the candidates; a candidate whose essential
    part plus every non-essential bound stays below θ is dropped; the rest look the non-essential terms up
    (a binary search each, not a pass over their lists) and are scored exactly."""
    threshold = top.threshold
    assert threshold is not None  # _score_blocks comes here only once θ is set
    if not len(rest):
        return 0
    idf_of = dict(terms)
    occurrences = Counter(term for term, _ in terms)
    bounds = {term: float(row[rest].max()) * (1 + BOUND_MARGIN) for term, row in term_bounds.items()}
    non_essential: list[int] = []
    below = 0.0
    for term in sorted(bounds, key=bounds.__getitem__):
        if below + bounds[term] >= threshold:
            break
        below += bounds[term]
        non_essential.append(term)
    stats.maxscore_rounds += 1
    essential = [term for term in term_bounds if term not in non_essential]
    if not essential:
        return 0  # even a note holding every term cannot reach θ here
    found = {term: _gather(seg, term, rest) for term in essential}
    scored = sum(len(docs) for docs, _ in found.values())
    distinct, places = _places([found[term][0] for term in essential])
    contributions = {term: _contribution(norms, idf_of[term], *found[term]) for term in essential}
    partial = np.zeros(len(distinct), dtype=np.float64)
    for term, place in zip(essential, places, strict=True):
        partial[place] += contributions[term] * occurrences[term]  # a repeated word counts each time
    # The bound first (it leaves few documents), then the filters on those only.
    survivors = np.flatnonzero(partial * (1 + BOUND_MARGIN) + below >= threshold)
    survivors = survivors[_eligible(seg, distinct[survivors], alive, codes)]
    candidates = distinct[survivors]
    if not len(candidates):
        return scored
    aligned: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # term → (positions in candidates, contributions)
    if len(essential) == 1:  # its postings are the documents: a survivor's position is its rank among them
        aligned[essential[0]] = (np.arange(len(survivors)), contributions[essential[0]][survivors])
    else:
        renumber = np.full(len(distinct), -1, dtype=np.int64)
        renumber[survivors] = np.arange(len(survivors))
        for term, place in zip(essential, places, strict=True):
            at = renumber[place]
            kept = at >= 0
            aligned[term] = (at[kept], contributions[term][kept])
    for term in non_essential:
        start, end = seg.offsets[term], seg.offsets[term + 1]
        term_docs = seg.post_docs[start:end]
        at = np.minimum(np.searchsorted(term_docs, candidates), len(term_docs) - 1)
        hit = term_docs[at] == candidates
        positions = np.flatnonzero(hit)
        aligned[term] = (
            positions,
            _contribution(norms, idf_of[term], candidates[hit], seg.post_tfs[start:end][at[hit]]),
        )
        scored += min(len(candidates), int(end - start))
    # The exact score: each occurrence's contribution added in query order, as Snapshot.score() adds them.
    scores = np.zeros(len(candidates), dtype=np.float64)
    for term, _idf in terms:
        positions, contribution = aligned[term]
        scores[positions] += contribution
    top.add(seg.note_ids[candidates], scores)
    return scored


def _score_selected(
    seg: Segment,
    norms: np.ndarray,
    terms: Terms,
    distinct: list[int],
    take: np.ndarray,
    alive: np.ndarray | None,
    codes: Codes,
    top: TopK,
) -> int:
    """Score every document of blocks `take` (ascending) exactly, in a local array of len(take) blocks."""
    width = len(take) * BLOCK_DOCS
    scores = np.zeros(width, dtype=np.float64)
    matched = np.zeros(width, dtype=bool)
    lows, highs = take << BLOCK_SHIFT, (take + 1) << BLOCK_SHIFT
    block_starts = np.arange(len(take), dtype=np.int64) * BLOCK_DOCS
    gathered: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray] | None] = {}
    scored = 0
    for term in distinct:
        start, end = seg.offsets[term], seg.offsets[term + 1]
        term_docs = seg.post_docs[start:end]
        low, high = np.searchsorted(term_docs, lows), np.searchsorted(term_docs, highs)
        counts = high - low
        total = int(counts.sum())
        if not total:
            gathered[term] = None
            continue
        # The postings of each block, one after the other: position low[i] + j for j < counts[i].
        index = np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(total)
        docs = term_docs[index]
        local = np.repeat(block_starts, counts) + (docs & (BLOCK_DOCS - 1))
        gathered[term] = (docs, seg.post_tfs[start:end][index], local)
        scored += total
    contributions: dict[tuple[int, float], np.ndarray] = {}
    for term, idf in terms:
        found = gathered[term]
        if found is None:
            continue
        docs, tfs, local = found
        if (term, idf) not in contributions:
            contributions[term, idf] = _contribution(norms, idf, docs, tfs)
        scores[local] += contributions[term, idf]
        matched[local] = True
    hits = np.flatnonzero(matched)
    docs = (take[hits >> BLOCK_SHIFT] << BLOCK_SHIFT) | (hits & (BLOCK_DOCS - 1))
    keep = _eligible(seg, docs, alive, codes)
    top.add(seg.note_ids[docs[keep]], scores[hits[keep]])
    return scored
