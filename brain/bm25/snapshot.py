"""Snapshot scoring: an immutable view of the live corpus that ranks exactly as rank-bm25's BM25Okapi."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import numpy as np
from django.conf import settings

from brain.bm25.okapi import EPSILON, K1, B
from brain.bm25.pruning import pruned_rank
from brain.bm25.segments import Segment, segment_from_docs, segment_from_rows
from brain.bm25.text import term_key

TERM_CACHE_SIZE = 4096  # distinct query tokens a snapshot remembers `term_info()` of


class Filters(TypedDict, total=False):
    """The labels a ranking can be narrowed to (None: any)."""

    wing: str | None
    hall: str | None
    status: str | None


@dataclass(frozen=True)
class QueryScores:
    """One query's pass over a snapshot's postings (`Snapshot.score()`), per part: each document's
    BM25 score, whether it matched a token, and (with shares) the idf weight of the tokens it holds."""

    snapshot: Snapshot
    tokens: tuple[str, ...]
    scores: list[np.ndarray]
    matched: list[np.ndarray]
    weights: list[np.ndarray] | None
    total_weight: float
    counts: list[np.ndarray] | None = None  # with weights: how many distinct query terms each document holds


class Snapshot:
    """An immutable view of the live corpus: segments, tombstones and the corpus statistics.

    Its parts are the base, a middle segment (the notes changed since the base, as of the
    last time it was built) and a small delta (the notes changed since the middle was
    built). A part's documents superseded by a later part, or removed, are tombstoned.
    `rank()` scores exactly as a BM25Okapi built over the live documents would.
    """

    def __init__(
        self,
        *,
        version: int,
        corpus_id: str,
        base: Segment,
        dead: np.ndarray,  # positions of tombstoned base documents
        delta: Segment,
        middle: Segment | None = None,
        middle_dead: np.ndarray | None = None,  # positions of tombstoned middle documents
    ) -> None:
        self.version = version
        self.corpus_id = corpus_id
        self.base = base
        self.delta = delta
        self.middle = middle if middle is not None else segment_from_docs([], version)
        no_dead = np.zeros(0, dtype=np.int64)
        self.parts: list[Segment] = [base, self.middle, delta]
        self.alives: list[np.ndarray | None] = []
        # Per part, document frequencies lost to tombstones, sparse: (term ids, counts).
        self.dead_info: list[tuple[np.ndarray, np.ndarray]] = []
        self.n_docs, self.total_length, self.tombstones = 0, 0, 0
        for seg, seg_dead in zip(
            self.parts, (dead, middle_dead if middle_dead is not None else no_dead, no_dead), strict=True
        ):
            alive, dead_terms, dead_length = None, no_dead, 0
            if len(seg_dead):
                alive = np.ones(len(seg), dtype=bool)
                alive[seg_dead] = False
                starts, ends = seg.fwd_offsets[seg_dead], seg.fwd_offsets[seg_dead + 1]
                dead_terms = np.concatenate([seg.fwd_terms[s:e] for s, e in zip(starts, ends, strict=True)])
                dead_length = int(seg.lengths[seg_dead].sum(dtype=np.int64))
            self.alives.append(alive)
            self.dead_info.append(np.unique(dead_terms, return_counts=True))
            self.n_docs += len(seg) - len(seg_dead)
            self.total_length += seg.total_length - dead_length
            self.tombstones += len(seg_dead)
        self.alive = self.alives[0]  # the base's
        self.avgdl = self.total_length / self.n_docs if self.n_docs else 0.0
        self._floor: float | None = None
        self._norms: list[np.ndarray] | None = None
        self._terms: dict[str, tuple[tuple[int, ...], int, float]] = {}  # term_info()'s answers
        self._wings: dict[tuple[str, str], int] = {}  # wing_size() and wing_frequency()'s answers

    def __len__(self) -> int:
        return self.n_docs

    @property
    def delta_notes(self) -> int:
        """Live notes outside the base (changed since it was built)."""
        return self.n_docs - (len(self.base) - (0 if self.alive is None else int(len(self.alive) - self.alive.sum())))

    def length_norms(self) -> list[np.ndarray]:
        """Per document of each part, BM25's length term `k1·(1 − b + b·dl/avgdl)`.

        Computed once per snapshot (avgdl is the snapshot's) instead of for every posting of
        every query term, element for element as rank-bm25 computes it, so scores stay equal.
        """
        if self._norms is None:  # two threads may both compute it: the same arrays either way
            self._norms = [K1 * (1 - B + B * seg.lengths.astype(np.float64) / self.avgdl) for seg in self.parts]
        return self._norms

    def _part_df(self, part: int, term: int) -> int:
        seg = self.parts[part]
        df = int(seg.offsets[term + 1] - seg.offsets[term])
        dead_terms, dead_counts = self.dead_info[part]
        if len(dead_terms):
            i = int(np.searchsorted(dead_terms, term))
            if i < len(dead_terms) and dead_terms[i] == term:
                df -= int(dead_counts[i])
        return df

    def idf_floor(self) -> float:
        """rank-bm25's value for a negative idf: ε × the mean idf over every live term (computed once, lazily:
        only a query with a term in more than half the notes needs it)."""
        if self._floor is None:
            # The base's df in its own term order; the small parts' terms are added to it where the base
            # has them, and the rest summed among themselves (sorting only those, not the base's vocabulary).
            base_keys = self.base.keys
            df = np.zeros(0, dtype=np.float64)  # part 0, the base, sets it
            extra_keys, extra_dfs = [], []
            for part, seg in enumerate(self.parts):
                part_df = np.diff(seg.offsets).astype(np.float64)
                dead_terms, dead_counts = self.dead_info[part]
                if len(dead_terms):
                    part_df[dead_terms] -= dead_counts
                if part == 0:
                    df = part_df
                    continue
                shared = np.zeros(len(seg.keys), dtype=bool)
                if len(base_keys) and len(seg.keys):
                    pos = np.minimum(np.searchsorted(base_keys, seg.keys), len(base_keys) - 1)
                    shared = base_keys[pos] == seg.keys
                    np.add.at(df, pos[shared], part_df[shared])
                extra_keys.append(seg.keys[~shared])
                extra_dfs.append(part_df[~shared])
            extra = np.concatenate(extra_keys)
            if len(extra):
                unique_keys, inverse = np.unique(extra, return_inverse=True)
                summed = np.bincount(inverse, weights=np.concatenate(extra_dfs), minlength=len(unique_keys))
                df = np.concatenate([df, summed])
            df = df[df > 0]
            if len(df):
                average_idf = float((np.log(self.n_docs - df + 0.5) - np.log(df + 0.5)).sum() / len(df))
            else:
                average_idf = 0.0
            # In a tiny brain the mean itself is negative, which would rank a note *lower* the more often
            # it uses the query word; there the floor is ε instead. Other corpora score as rank-bm25.
            self._floor = EPSILON * average_idf if average_idf > 0 else EPSILON
        return self._floor

    def term_info(self, token: str) -> tuple[tuple[int, ...], int, float]:
        """(the term's id in each part, -1 where absent; live document frequency; idf as rank-bm25 uses it).

        Remembered per snapshot (which never changes): one search asks for each of its terms several times
        (ranking, shares, the evidence floor, the raw-note count)."""
        found = self._terms.get(token)
        if found is None:
            found = self._term_info(token)
            if len(self._terms) >= TERM_CACHE_SIZE:
                self._terms.clear()  # a bound on memory; a snapshot lives seconds to hours
            self._terms[token] = found  # two threads may both compute it: the same value either way
        return found

    def _term_info(self, token: str) -> tuple[tuple[int, ...], int, float]:
        key = term_key(token)
        ids = tuple(seg.term(key) for seg in self.parts)
        df = sum(self._part_df(part, term) for part, term in enumerate(ids) if term >= 0)
        idf = 0.0
        if df:
            idf = float(np.log(self.n_docs - df + 0.5) - np.log(df + 0.5))
            if idf < 0:
                idf = self.idf_floor()
        return ids, df, idf

    def wing_size(self, wing: str) -> int:
        """How many live notes the wing holds (remembered: a snapshot never changes)."""
        key = ("", wing)
        found = self._wings.get(key)
        if found is None:
            found = 0
            for part, seg in enumerate(self.parts):
                code = seg.code(wing)
                if code < 0:
                    continue
                mask = seg.wing_codes == code
                alive = self.alives[part]
                found += int((mask & alive).sum() if alive is not None else mask.sum())
            self._wings[key] = found
        return found

    def wing_frequency(self, token: str, wing: str) -> int:
        """How many live notes of the wing hold the term: its document frequency among the wing's notes."""
        key = (token, wing)
        found = self._wings.get(key)
        if found is None:
            found = 0
            ids = self.term_info(token)[0]
            for part, (seg, term) in enumerate(zip(self.parts, ids, strict=True)):
                code = seg.code(wing)
                if term < 0 or code < 0:
                    continue
                docs = seg.post_docs[seg.offsets[term] : seg.offsets[term + 1]]
                mask = seg.wing_codes[docs] == code
                alive = self.alives[part]
                if alive is not None:
                    mask &= alive[docs]
                found += int(mask.sum())
            if len(self._wings) >= TERM_CACHE_SIZE:
                self._wings.clear()
            self._wings[key] = found
        return found

    def unseen_idf(self) -> float:
        """The weight `idf_shares` gives a query term no live note uses: that of a term used once."""
        return max(float(np.log(self.n_docs - 1 + 0.5) - np.log(1 + 0.5)), EPSILON)

    def idf_shares(self, query_tokens: list[str], note_ids: list[int]) -> Mapping[int, float]:
        """For each note, the share of the query's idf weight carried by the query terms it contains.

        Each distinct query term counts once. A term no live note uses weighs as much as the
        rarest term a note could use (document frequency 1): a query about something the
        brain has never seen stays mostly unmatched. `brain.floors` compares the share with
        BRAIN_BM25_FLOOR.
        """
        return self.shares_and_counts(query_tokens, note_ids)[0]

    def shares_and_counts(
        self, query_tokens: list[str], note_ids: list[int]
    ) -> tuple[dict[int, float], dict[int, int]]:
        """`idf_shares()`, and how many distinct query terms each note contains (the evidence floor's count)."""
        distinct = list(dict.fromkeys(query_tokens))
        if not distinct or self.n_docs == 0 or not note_ids:
            return {note_id: 0.0 for note_id in note_ids}, {note_id: 0 for note_id in note_ids}
        unseen_idf = self.unseen_idf()
        wanted = np.asarray(note_ids, dtype=np.int64)
        located = []  # per part: positions of the wanted notes that are alive there, or -1
        for seg, alive in zip(self.parts, self.alives, strict=True):
            positions = np.full(len(wanted), -1, dtype=np.int64)
            if len(seg):
                found = np.minimum(np.searchsorted(seg.note_ids, wanted), len(seg) - 1)
                hit = seg.note_ids[found] == wanted
                if alive is not None:
                    hit &= alive[found]
                positions[hit] = found[hit]
            located.append(positions)
        matched = np.zeros(len(wanted), dtype=np.float64)
        counts = np.zeros(len(wanted), dtype=np.int64)
        total = 0.0
        for token in distinct:
            ids, df, idf = self.term_info(token)
            if df == 0:
                total += unseen_idf
                continue
            # A term in half the notes has idf 0 (rank-bm25's formula); it still says something.
            weight = max(idf, EPSILON)
            total += weight
            has_term = np.zeros(len(wanted), dtype=bool)
            for positions, seg, term in zip(located, self.parts, ids, strict=True):
                if term >= 0:
                    docs = seg.post_docs[seg.offsets[term] : seg.offsets[term + 1]]
                    # Postings are sorted: a binary search per wanted note, not a pass over the whole list.
                    at = np.minimum(np.searchsorted(docs, positions), len(docs) - 1)
                    has_term |= (positions >= 0) & (docs[at] == positions)
            matched[has_term] += weight
            counts[has_term] += 1
        note_shares = {
            int(note_id): float(matched[i] / total) if total > 0 else 0.0 for i, note_id in enumerate(note_ids)
        }
        return note_shares, {int(note_id): int(counts[i]) for i, note_id in enumerate(note_ids)}

    def rank(
        self, query_tokens: list[str], *, limit: int, exhaustive: bool | None = None, **filters: Unpack[Filters]
    ) -> list[tuple[int, float]]:
        """(note_id, score) of the best `limit` notes that match at least one token, best first.

        `filters`: `wing`, `hall`, `status`; `exhaustive`: as for `rank_with_shares()`."""
        return self.rank_with_shares(query_tokens, limit=limit, shares=False, exhaustive=exhaustive, **filters)[0]

    def score(self, query_tokens: list[str], *, shares: bool = True, reuse: QueryScores | None = None) -> QueryScores:
        """One pass of the query over the postings of every part: each note's score (and idf weight).

        `reuse`: a pass done already, returned as it is if it is this snapshot's, for these tokens (with
        the weights when `shares` wants them).
        """
        if (
            reuse is not None
            and reuse.snapshot is self
            and reuse.tokens == tuple(query_tokens)
            and (reuse.weights is not None or not shares)
        ):
            return reuse
        scores = [np.zeros(len(seg), dtype=np.float64) for seg in self.parts]
        matched = [np.zeros(len(seg), dtype=bool) for seg in self.parts]
        weights = [np.zeros(len(seg), dtype=np.float64) for seg in self.parts] if shares else None
        counts = [np.zeros(len(seg), dtype=np.int32) for seg in self.parts] if shares else None
        total_weight = 0.0
        if self.n_docs == 0:  # nothing to score (and no average length to normalise by)
            return QueryScores(self, tuple(query_tokens), scores, matched, weights, total_weight, counts)
        terms: dict[str, tuple[tuple[int, ...], int, float]] = {}
        norms = self.length_norms()
        for token in query_tokens:  # a repeated token counts again, as in rank-bm25
            first = token not in terms
            if first:
                terms[token] = self.term_info(token)
            ids, df, idf = terms[token]
            weight = 0.0
            if first and shares:  # idf_shares' weights: each distinct term once
                weight = max(idf, EPSILON) if df else 0.0
                total_weight += weight if df else self.unseen_idf()
            for index, (seg, term) in enumerate(zip(self.parts, ids, strict=True)):
                if term < 0:
                    continue
                start, end = seg.offsets[term], seg.offsets[term + 1]
                docs = seg.post_docs[start:end]
                tf = seg.post_tfs[start:end].astype(np.float64)
                # rank-bm25's expression, term for term (the length term precomputed).
                scores[index][docs] += idf * (tf * (K1 + 1) / (tf + norms[index][docs]))
                matched[index][docs] = True
                if weight and weights is not None:  # a weight only with shares, when weights is a list
                    weights[index][docs] += weight
                if first and counts is not None:  # counts is a list exactly when shares
                    counts[index][docs] += 1
        return QueryScores(self, tuple(query_tokens), scores, matched, weights, total_weight, counts)

    def rank_with_shares(
        self,
        query_tokens: list[str],
        *,
        limit: int,
        wing: str | None = None,
        hall: str | None = None,
        status: str | None = None,
        shares: bool = True,
        scored: QueryScores | None = None,
        exhaustive: bool | None = None,
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """`rank()`, and (`shares`) each ranked note's `idf_shares()`.

        With pruning (BRAIN_BM25_PRUNING, unless `exhaustive` says otherwise; `brain.bm25.pruning`)
        only the postings that can reach the top `limit` are scored, and the shares of the ranked
        notes are looked up afterwards. Exhaustive: one pass over every posting, and the shares
        from the same pass; `scored` is that pass, done already by `score()` for another filter of
        the same query, ignored unless it is this snapshot's, for these tokens. Both give the same
        notes, scores and shares.
        """
        ranking, note_shares, _ = self.rank_with_evidence(
            query_tokens,
            limit=limit,
            wing=wing,
            hall=hall,
            status=status,
            shares=shares,
            scored=scored,
            exhaustive=exhaustive,
        )
        return ranking, note_shares

    def rank_with_evidence(
        self,
        query_tokens: list[str],
        *,
        limit: int,
        wing: str | None = None,
        hall: str | None = None,
        status: str | None = None,
        shares: bool = True,
        scored: QueryScores | None = None,
        exhaustive: bool | None = None,
    ) -> tuple[list[tuple[int, float]], dict[int, float], dict[int, int]]:
        """`rank_with_shares()`, and (`shares`) how many distinct query terms each ranked note contains."""
        if self.n_docs == 0 or limit <= 0:
            return [], {}, {}
        if exhaustive is None:
            exhaustive = scored is not None or not settings.BRAIN_BM25_PRUNING
        if not exhaustive:
            ranking = pruned_rank(
                self, query_tokens, limit=limit, filters={"status": status, "wing": wing, "hall": hall}
            )
            if not shares:
                return ranking, {}, {}
            note_shares, note_counts = self.shares_and_counts(query_tokens, [note_id for note_id, _ in ranking])
            return ranking, note_shares, note_counts
        scored = self.score(query_tokens, shares=shares, reuse=scored)
        found_ids, found_scores, found_weights, found_counts = [], [], [], []
        for index, (seg, alive) in enumerate(zip(self.parts, self.alives, strict=True)):
            seg_matched = scored.matched[index] if alive is None else scored.matched[index] & alive
            candidates = np.flatnonzero(seg_matched)
            # Filters compare small integer codes, not strings: cheap even with 100,000 candidates.
            for codes, value in ((seg.status_codes, status), (seg.wing_codes, wing), (seg.hall_codes, hall)):
                if value is not None:
                    candidates = candidates[codes[candidates] == seg.code(value)]
            found_ids.append(seg.note_ids[candidates])
            found_scores.append(scored.scores[index][candidates])
            if shares and scored.weights is not None and scored.counts is not None:  # with shares, both are
                found_weights.append(scored.weights[index][candidates])
                found_counts.append(scored.counts[index][candidates])
        ids, cand_scores = np.concatenate(found_ids), np.concatenate(found_scores)
        if len(ids) == 0:
            return [], {}, {}
        top = np.arange(len(ids))
        if len(ids) > limit:
            # Everything scoring at least the limit-th best: notes tied at the cut all compete.
            cut = np.partition(cand_scores, len(ids) - limit)[len(ids) - limit]
            top = np.flatnonzero(cand_scores >= cut)
        # Best score first; ties by note id, so results are stable (and the same as a full rebuild's).
        order = top[np.lexsort((ids[top], -cand_scores[top]))][:limit]
        ranking = [(int(ids[i]), float(cand_scores[i])) for i in order]
        note_shares = {}
        note_counts = {}
        if shares:
            cand_weights, total_weight = np.concatenate(found_weights), scored.total_weight
            note_shares = {
                int(ids[i]): float(cand_weights[i] / total_weight) if total_weight > 0 else 0.0 for i in order
            }
            cand_counts = np.concatenate(found_counts)
            note_counts = {int(ids[i]): int(cand_counts[i]) for i in order}
        return ranking, note_shares, note_counts


EMPTY_CORPUS = ""


def build_index(rows: Iterable[tuple[Any, ...]], version: int = 0) -> Snapshot:
    """A one-segment snapshot of `rows` — (id, title, body, status, wing, hall) — for tests and benchmarks."""
    base = segment_from_rows((row[:6] for row in rows), version)
    return Snapshot(
        version=version,
        corpus_id=EMPTY_CORPUS,
        base=base,
        dead=np.zeros(0, np.int64),
        delta=segment_from_docs([], version),
    )
