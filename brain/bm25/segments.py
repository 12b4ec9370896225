"""Segments: immutable inverted indexes over some notes, built from text or from tokenised notes."""

from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from brain.bm25.counters import stats
from brain.bm25.okapi import K1, B
from brain.bm25.text import note_text, term_key, tokenize

NoteRow = tuple[int, str, str, str, str, str]  # (id, title, body, status, wing, hall)

# Block-max bounds for dynamic pruning (`brain.bm25.pruning`): documents are cut into blocks of
# 2**BLOCK_SHIFT consecutive positions, and each term with at least LONG_POSTINGS postings keeps, per
# block, the largest term-frequency part of BM25 any of its postings there reaches. Shorter lists are
# scored whole at query time (cheap), so they need no stored bound.
BLOCK_SHIFT = 10
BLOCK_DOCS = 1 << BLOCK_SHIFT
LONG_POSTINGS = 2048


@dataclass
class DocTerms:
    """One note, tokenised: its distinct term keys, their counts and its length in tokens."""

    note_id: int
    status: str
    wing: str
    hall: str
    keys: np.ndarray  # uint64
    tfs: np.ndarray  # int32
    length: int
    fingerprint: int = 0


def text_fingerprint(title: str, body: str) -> int:
    """The first 8 bytes of md5(title + "\n" + body), as PostgreSQL's `md5(title || E'\n' || body)` gives them:
    how a base on disk is compared with the database when the change log cannot say what changed."""
    return int.from_bytes(hashlib.md5(f"{title}\n{body}".encode()).digest()[:8], "big")  # noqa: S324 — not security


def doc_terms(note_id: int, title: str, body: str, status: str, wing: str, hall: str) -> DocTerms:
    tokens = tokenize(note_text(title, body))
    stats.tokenised += 1
    counts = Counter(tokens)
    keys = np.fromiter((term_key(t) for t in counts), dtype=np.uint64, count=len(counts))
    tfs = np.fromiter(counts.values(), dtype=np.int32, count=len(counts))
    return DocTerms(note_id, status, wing, hall, keys, tfs, len(tokens), text_fingerprint(title, body))


SEGMENT_ARRAYS = (
    "note_ids",
    "lengths",
    "status_codes",
    "wing_codes",
    "hall_codes",
    "keys",
    "offsets",
    "post_docs",
    "post_tfs",
    "fwd_offsets",
    "fwd_terms",
    "block_terms",
    "block_max",
    "fingerprints",
)


@dataclass
class Segment:
    """An immutable inverted index over some notes, documents sorted by note id.

    Postings of term t (its key is `keys[t]`, keys sorted) are
    `post_docs/post_tfs[offsets[t]:offsets[t+1]]`; the forward index
    `fwd_terms[fwd_offsets[d]:fwd_offsets[d+1]]` lists document d's terms,
    which is what a tombstone needs to take d out of the document frequencies.

    `block_max[r, k]` bounds, for term `block_terms[r]` (the terms with at least LONG_POSTINGS
    postings, ascending), `tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))` over its postings in
    document block k, with avgdl this segment's own (`reference_avgdl`); 0 where it has none.
    """

    version: int
    labels: list[str]  # status/wing/hall codes → strings
    total_length: int
    note_ids: np.ndarray  # int64
    lengths: np.ndarray  # int32
    status_codes: np.ndarray  # int32
    wing_codes: np.ndarray
    hall_codes: np.ndarray
    keys: np.ndarray  # uint64, sorted
    offsets: np.ndarray  # int64, len(keys) + 1
    post_docs: np.ndarray  # int32
    post_tfs: np.ndarray  # int32
    fwd_offsets: np.ndarray  # int64, n + 1
    fwd_terms: np.ndarray  # int32
    block_terms: np.ndarray  # int32, sorted
    block_max: np.ndarray  # float32, (len(block_terms), number of blocks)
    fingerprints: np.ndarray  # uint64, per document: `text_fingerprint()` of its title and body (0: unknown)
    path: Path | None = None  # where it is memory-mapped from, if shared
    # blocks_with()'s answers, remembered (a segment never changes)
    label_blocks: dict[tuple[str, int], np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.note_ids)

    @property
    def blocks(self) -> int:
        return (len(self.note_ids) + BLOCK_DOCS - 1) >> BLOCK_SHIFT

    @property
    def reference_avgdl(self) -> float:
        """The average length `block_max` was computed with (the same expression as at build)."""
        return self.total_length / len(self.note_ids) if len(self.note_ids) else 0.0

    def block_row(self, term: int) -> int:
        """The row of `term` in `block_max`, or -1 (a short list: no stored bounds)."""
        i = int(np.searchsorted(self.block_terms, term))
        return i if i < len(self.block_terms) and int(self.block_terms[i]) == term else -1

    def blocks_with(self, codes_name: str, code: int) -> np.ndarray:
        """Per block, whether any document in it has this status/wing/hall code (cached: segments never change)."""
        key = (codes_name, code)
        found = self.label_blocks.get(key)
        if found is None:
            codes = getattr(self, codes_name)
            found = np.zeros(self.blocks, dtype=bool)
            found[np.flatnonzero(codes == code) >> BLOCK_SHIFT] = True
            self.label_blocks[key] = found
        return found

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in SEGMENT_ARRAYS)

    def code(self, label: str) -> int:
        try:
            return self.labels.index(label)
        except ValueError:
            return -1

    def term(self, key: int) -> int:
        """The term id of `key`, or -1."""
        i = int(np.searchsorted(self.keys, np.uint64(key)))
        return i if i < len(self.keys) and int(self.keys[i]) == key else -1

    def positions(self, note_ids: Iterable[int]) -> np.ndarray:
        """Document positions of those of `note_ids` this segment holds."""
        wanted = np.fromiter(note_ids, dtype=np.int64)
        if not len(wanted) or not len(self.note_ids):
            return np.zeros(0, dtype=np.int64)
        found = np.minimum(np.searchsorted(self.note_ids, wanted), len(self.note_ids) - 1)
        return found[self.note_ids[found] == wanted]


def build_segment(
    *,
    version: int,
    note_ids: np.ndarray,
    statuses: list[str],
    wings: list[str],
    halls: list[str],
    lengths: np.ndarray,
    doc_of: np.ndarray,
    keys: np.ndarray | None = None,
    tfs: np.ndarray,
    term_of: np.ndarray | None = None,
    term_keys: np.ndarray | None = None,
    fingerprints: np.ndarray | None = None,
) -> Segment:
    """A segment from flat arrays: one entry per document, one per (document, distinct term).

    A pair's term is given either by its key (`keys`) or, using less memory, by its index
    (`term_of`) in `term_keys`, a list of distinct keys in any order.
    """
    if fingerprints is None:
        fingerprints = np.zeros(len(note_ids), dtype=np.uint64)
    order = np.argsort(note_ids, kind="stable")
    if len(order) and not np.all(order == np.arange(len(order))):  # documents must be sorted by note id
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        note_ids = note_ids[order]
        statuses = [statuses[i] for i in order]
        wings = [wings[i] for i in order]
        halls = [halls[i] for i in order]
        lengths = lengths[order]
        fingerprints = fingerprints[order]
        doc_of = rank[doc_of]
    n = len(note_ids)
    if term_of is not None:
        assert term_keys is not None  # term_of indexes term_keys
        # Sorting the few distinct keys and renumbering the pairs equals np.unique(keys, return_inverse=True)
        # without sorting a copy of every pair's key (at 1,000,000 notes: 93 million, 2 GB of scratch).
        by_key = np.argsort(term_keys, kind="stable")
        vocabulary = np.asarray(term_keys, dtype=np.uint64)[by_key]
        renumber = np.empty(len(by_key), dtype=np.int32)
        renumber[by_key] = np.arange(len(by_key), dtype=np.int32)
        term_ids = renumber[term_of]
    else:
        assert keys is not None  # without term_of, keys name each pair's term
        vocabulary, term_ids = np.unique(keys, return_inverse=True)
        term_ids = term_ids.astype(np.int32)
    doc_of = doc_of.astype(np.int32, copy=False)
    # Forward index: the (document, term) pairs in document order.
    fwd_order = np.lexsort((term_ids, doc_of))
    fwd_terms = term_ids[fwd_order]
    del fwd_order  # 8 bytes a pair: not kept alive while the postings' order is sorted below
    fwd_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc_of, minlength=n), out=fwd_offsets[1:])
    # Postings: the same pairs in term order, documents ascending within a term.
    post_order = np.lexsort((doc_of, term_ids))
    offsets = np.zeros(len(vocabulary) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_ids, minlength=len(vocabulary)), out=offsets[1:])
    labels: dict[str, int] = {}
    encode = lambda values: np.asarray([labels.setdefault(v, len(labels)) for v in values], dtype=np.int32)  # noqa: E731
    status_codes, wing_codes, hall_codes = encode(statuses), encode(wings), encode(halls)
    lengths = np.asarray(lengths, dtype=np.int32)
    post_docs = doc_of[post_order]
    post_tfs = np.asarray(tfs, dtype=np.int32)[post_order]
    del post_order
    block_terms, block_max = block_maxima(offsets, post_docs, post_tfs, lengths)
    return Segment(
        version=version,
        labels=list(labels),
        total_length=int(lengths.sum(dtype=np.int64)),
        note_ids=np.asarray(note_ids, dtype=np.int64),
        lengths=lengths,
        status_codes=status_codes,
        wing_codes=wing_codes,
        hall_codes=hall_codes,
        keys=vocabulary.astype(np.uint64),
        offsets=offsets,
        post_docs=post_docs,
        post_tfs=post_tfs,
        fwd_offsets=fwd_offsets,
        fwd_terms=fwd_terms.astype(np.int32),
        block_terms=block_terms,
        block_max=block_max,
        fingerprints=np.asarray(fingerprints, dtype=np.uint64),
    )


def block_maxima(
    offsets: np.ndarray, post_docs: np.ndarray, post_tfs: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(block_terms, block_max) of a segment: see `Segment`. One pass over the long lists, a term at a time
    (no scratch array of every posting)."""
    n = len(lengths)
    blocks = (n + BLOCK_DOCS - 1) >> BLOCK_SHIFT
    long_terms = np.flatnonzero(np.diff(offsets) >= LONG_POSTINGS).astype(np.int32)
    block_max = np.zeros((len(long_terms), blocks), dtype=np.float32)
    if not len(long_terms):
        return long_terms, block_max
    avgdl = int(lengths.sum(dtype=np.int64)) / n
    norms = K1 * (1 - B + B * lengths.astype(np.float64) / avgdl)
    for row, term in enumerate(long_terms):
        start, end = offsets[term], offsets[term + 1]
        docs = post_docs[start:end]
        tf = post_tfs[start:end].astype(np.float64)
        part = tf * (K1 + 1) / (tf + norms[docs])
        block_of = docs >> BLOCK_SHIFT
        firsts = np.flatnonzero(np.concatenate(([True], block_of[1:] != block_of[:-1])))
        block_max[row, block_of[firsts]] = np.maximum.reduceat(part, firsts)
    # float32 rounds to the nearest value, maybe below: one step up keeps every stored figure a bound.
    np.nextafter(block_max, np.float32(np.inf), out=block_max, where=block_max > 0)
    return long_terms, block_max


def segment_from_docs(docs: Iterable[DocTerms], version: int) -> Segment:
    docs = list(docs)
    sizes = np.fromiter((len(d.keys) for d in docs), dtype=np.int64, count=len(docs))
    return build_segment(
        version=version,
        note_ids=np.fromiter((d.note_id for d in docs), dtype=np.int64, count=len(docs)),
        statuses=[d.status for d in docs],
        wings=[d.wing for d in docs],
        halls=[d.hall for d in docs],
        lengths=np.fromiter((d.length for d in docs), dtype=np.int64, count=len(docs)),
        doc_of=np.repeat(np.arange(len(docs), dtype=np.int64), sizes),
        keys=np.concatenate([d.keys for d in docs]) if docs else np.zeros(0, dtype=np.uint64),
        tfs=np.concatenate([d.tfs for d in docs]) if docs else np.zeros(0, dtype=np.int32),
        fingerprints=np.fromiter((d.fingerprint for d in docs), dtype=np.uint64, count=len(docs)),
    )


def segment_from_rows(rows: Iterable[NoteRow], version: int) -> Segment:
    """`rows`: (id, title, body, status, wing, hall); tokenised into typed arrays, not per-note objects,
    so 1,000,000 notes fit."""
    ids, lengths = array("q"), array("q")
    fingerprints = array("Q")
    doc_of, tfs = array("i"), array("i")
    term_of = array("i")  # each pair's term, as an index into `term_index` (4 bytes a pair, not an 8-byte key)
    term_index: dict[int, int] = {}  # term key → its index
    statuses: list[str] = []
    wings: list[str] = []
    halls: list[str] = []
    for doc, (note_id, title, body, status, wing, hall) in enumerate(rows):
        tokens = tokenize(note_text(title, body))
        stats.tokenised += 1
        counts = Counter(tokens)
        ids.append(note_id)
        fingerprints.append(text_fingerprint(title, body))
        lengths.append(len(tokens))
        statuses.append(status)
        wings.append(wing)
        halls.append(hall)
        term_of.extend(term_index.setdefault(term_key(t), len(term_index)) for t in counts)
        tfs.extend(counts.values())
        doc_of.extend([doc] * len(counts))
    return build_segment(
        version=version,
        note_ids=np.frombuffer(ids, dtype=np.int64) if ids else np.zeros(0, np.int64),
        statuses=statuses,
        wings=wings,
        halls=halls,
        lengths=np.frombuffer(lengths, dtype=np.int64) if lengths else np.zeros(0, np.int64),
        doc_of=np.frombuffer(doc_of, dtype=np.int32) if doc_of else np.zeros(0, np.int32),
        tfs=np.frombuffer(tfs, dtype=np.int32) if tfs else np.zeros(0, np.int32),
        term_of=np.frombuffer(term_of, dtype=np.int32) if term_of else np.zeros(0, np.int32),
        term_keys=np.fromiter(term_index, dtype=np.uint64, count=len(term_index)),
        fingerprints=np.frombuffer(fingerprints, dtype=np.uint64) if fingerprints else np.zeros(0, np.uint64),
    )
