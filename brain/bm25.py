"""The BM25 index over title + body, kept fresh incrementally.

Scores are exactly rank-bm25's `BM25Okapi` (same idf with the epsilon floor
for very common terms, same length normalisation) over the whole live corpus,
computed from inverted indexes with numpy: at 100,000 notes rank-bm25 needs
seconds per query, this needs milliseconds. `tests/search/test_bm25_index.py`
and `tests/search/test_bm25_segments.py` check the two agree.

Layout, in the manner of a search engine's segments:

- a large immutable **base segment** (postings, document lengths, a forward
  index of each document's terms), built once and, when it is large, written
  under `BRAIN_BM25_DIR` and memory-mapped, so every process on the machine
  shares one copy in the page cache;
- a small **delta segment** of the notes changed since the base was built,
  rebuilt from already tokenised notes at each refresh (milliseconds);
- **tombstones**: base documents of notes changed or removed since, masked
  out of results and subtracted from the statistics;
- a **background merge** (a thread) that folds base and delta into a new
  base when the delta holds `BRAIN_BM25_MERGE_NOTES` notes; queries keep
  using the old snapshot until the new one is swapped in.

N, avgdl and every document frequency are computed over base minus
tombstones plus delta, so scores equal a full rebuild's.

Freshness: every write bumps `BrainVersion` and logs the changed note ids in
`NoteChange` with the new version, in the writer's transaction (the version
row's lock makes versions commit in order). A search reads the version (at
most every `BRAIN_BM25_CHECK_SECONDS`, and always after a write in this
process), and applies the logged changes since its snapshot: it tokenises
only the changed notes, never rebuilds the whole index.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
import unicodedata
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import snowballstemmer
from django.conf import settings
from django.db import connection

from brain.models import BrainVersion, Note, NoteChange
from hyperguild.lib.processes import give_back_freed_memory

logger = logging.getLogger(__name__)

# Okapi parameters tuned for short scientific/technical notes (BEIR's
# Elasticsearch baseline uses k1 0.9, b 0.4 as well).
K1 = 0.9
B = 0.4
EPSILON = 0.25  # rank-bm25's floor for negative idf, as a fraction of the mean idf
TITLE_REPEAT = 1  # how many times the title counts in the note's text

WORD_RE = re.compile(r"\w+", re.UNICODE)
# Scripts written without spaces: each character is a token.
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves""".split()
)

# A snowball stemmer keeps the word it is working on in the object itself: two threads sharing one
# raise IndexError and, worse, return wrong stems (which the cache below would then keep). One per thread.
_stemmers = threading.local()


def _stemmer():
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if not word.isascii():
        return word
    return _stemmer().stemWord(word)


def tokenize(text: str) -> list[str]:
    """Lowercased, NFKC-normalised words without English stopwords, stemmed;
    CJK runs are split into single characters."""
    text = unicodedata.normalize("NFKC", text).lower()
    words = WORD_RE.findall(text)
    if not CJK_RE.search(text):  # the common case, checked once per text
        return [_stem(word) for word in words if word not in STOPWORDS]
    tokens: list[str] = []
    for word in words:
        if CJK_RE.search(word):
            tokens.extend(ch for ch in word if not ch.isspace())
        elif word not in STOPWORDS:
            tokens.append(_stem(word))
    return tokens


@lru_cache(maxsize=100_000)
def word_tokens(word: str) -> tuple[str, ...]:
    """`tokenize(word)` for one word, remembered: excerpts look at the same words again and again."""
    return tuple(tokenize(word))


def note_text(title: str, body: str) -> str:
    return "\n".join([title] * TITLE_REPEAT + [body])


# -- documents and segments --------------------------------------------------------------


@lru_cache(maxsize=500_000)
def term_key(token: str) -> int:
    """A stable 64-bit key for a term, the same in every process (segments on disk store keys, not strings)."""
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")


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


class Stats:
    """Counters tests and benchmarks read; never used for decisions."""

    def __init__(self) -> None:
        self.tokenised = 0  # notes tokenised by this process
        self.full_builds = 0  # whole-corpus builds from the database
        self.loads = 0  # base segments memory-mapped from BRAIN_BM25_DIR
        self.merges = 0  # background merges of base + delta
        self.refreshes = 0  # snapshots published after changes
        self.middle_builds = 0  # middle segments rebuilt from every changed note (past BRAIN_BM25_FRESH_NOTES)


stats = Stats()


def doc_terms(note_id: int, title: str, body: str, status: str, wing: str, hall: str) -> DocTerms:
    tokens = tokenize(note_text(title, body))
    stats.tokenised += 1
    counts = Counter(tokens)
    keys = np.fromiter((term_key(t) for t in counts), dtype=np.uint64, count=len(counts))
    tfs = np.fromiter(counts.values(), dtype=np.int32, count=len(counts))
    return DocTerms(note_id, status, wing, hall, keys, tfs, len(tokens))


SEGMENT_ARRAYS = (
    "note_ids", "lengths", "status_codes", "wing_codes", "hall_codes",
    "keys", "offsets", "post_docs", "post_tfs", "fwd_offsets", "fwd_terms",
)  # fmt: skip


@dataclass
class Segment:
    """An immutable inverted index over some notes, documents sorted by note id.

    Postings of term t (its key is `keys[t]`, keys sorted) are
    `post_docs/post_tfs[offsets[t]:offsets[t+1]]`; the forward index
    `fwd_terms[fwd_offsets[d]:fwd_offsets[d+1]]` lists document d's terms,
    which is what a tombstone needs to take d out of the document frequencies.
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
    path: Path | None = None  # where it is memory-mapped from, if shared

    def __len__(self) -> int:
        return len(self.note_ids)

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
) -> Segment:
    """A segment from flat arrays: one entry per document, one per (document, distinct term).

    A pair's term is given either by its key (`keys`) or, using less memory, by its index
    (`term_of`) in `term_keys`, a list of distinct keys in any order.
    """
    order = np.argsort(note_ids, kind="stable")
    if len(order) and not np.all(order == np.arange(len(order))):  # documents must be sorted by note id
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        note_ids = note_ids[order]
        statuses = [statuses[i] for i in order]
        wings = [wings[i] for i in order]
        halls = [halls[i] for i in order]
        lengths = lengths[order]
        doc_of = rank[doc_of]
    n = len(note_ids)
    if term_of is not None:
        # Sorting the few distinct keys and renumbering the pairs equals np.unique(keys, return_inverse=True)
        # without sorting a copy of every pair's key (at 1,000,000 notes: 93 million, 2 GB of scratch).
        by_key = np.argsort(term_keys, kind="stable")
        vocabulary = np.asarray(term_keys, dtype=np.uint64)[by_key]
        renumber = np.empty(len(by_key), dtype=np.int32)
        renumber[by_key] = np.arange(len(by_key), dtype=np.int32)
        term_ids = renumber[term_of]
    else:
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
        post_docs=doc_of[post_order],
        post_tfs=np.asarray(tfs, dtype=np.int32)[post_order],
        fwd_offsets=fwd_offsets,
        fwd_terms=fwd_terms.astype(np.int32),
    )


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
    )


def segment_from_rows(rows: Iterable[tuple], version: int) -> Segment:
    """`rows`: (id, title, body, status, wing, hall); tokenised into typed arrays, not per-note objects,
    so 1,000,000 notes fit."""
    ids, lengths = array("q"), array("q")
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
    )


def merge_segments(base: Segment, alive: np.ndarray | None, delta: Segment, version: int) -> Segment:
    """A new base: the live documents of `base` plus every document of `delta`. No text is tokenised again."""
    parts = []
    for seg, keep in ((base, alive), (delta, None)):
        n = len(seg)
        if keep is None:
            keep = np.ones(n, dtype=bool)
        term_of_posting = np.repeat(np.arange(len(seg.keys), dtype=np.int64), np.diff(seg.offsets))
        live = keep[seg.post_docs]
        docs_kept = np.flatnonzero(keep)
        renumber = np.full(n, -1, dtype=np.int64)
        renumber[docs_kept] = np.arange(len(docs_kept))
        parts.append(
            (
                seg.note_ids[docs_kept],
                [seg.labels[c] for c in seg.status_codes[docs_kept]],
                [seg.labels[c] for c in seg.wing_codes[docs_kept]],
                [seg.labels[c] for c in seg.hall_codes[docs_kept]],
                seg.lengths[docs_kept],
                renumber[seg.post_docs[live]],
                seg.keys[term_of_posting[live]],
                seg.post_tfs[live],
            )
        )
    (ids_a, st_a, wi_a, ha_a, len_a, doc_a, key_a, tf_a), (ids_b, st_b, wi_b, ha_b, len_b, doc_b, key_b, tf_b) = parts
    return build_segment(
        version=version,
        note_ids=np.concatenate([ids_a, ids_b]),
        statuses=st_a + st_b,
        wings=wi_a + wi_b,
        halls=ha_a + ha_b,
        lengths=np.concatenate([len_a, len_b]),
        doc_of=np.concatenate([doc_a, doc_b + len(ids_a)]),
        keys=np.concatenate([key_a, key_b]),
        tfs=np.concatenate([tf_a, tf_b]),
    )


def save_segment(segment: Segment, directory: Path, corpus_id: str) -> Path:
    """Write `segment` as .npy files under `directory/base-<version>` (atomically: a temporary folder renamed)."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"base-{segment.version:014d}"
    if final.exists():
        return final
    tmp = directory / f".tmp-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name in SEGMENT_ARRAYS:
        np.save(tmp / f"{name}.npy", getattr(segment, name), allow_pickle=False)
    meta = {"version": segment.version, "corpus_id": corpus_id, "labels": segment.labels,
            "total_length": segment.total_length}  # fmt: skip
    (tmp / "meta.json").write_text(json.dumps(meta))
    os.rename(tmp, final)
    return final


def load_segment(path: Path) -> Segment:
    """Memory-map a saved segment: pages are shared with every other process that maps it."""
    meta = json.loads((path / "meta.json").read_text())
    arrays = {name: np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in SEGMENT_ARRAYS}
    stats.loads += 1
    return Segment(version=meta["version"], labels=meta["labels"], total_length=meta["total_length"], path=path,
                   **arrays)  # fmt: skip


# -- a snapshot: what one query ranks against ---------------------------------------------


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
        for seg, seg_dead in zip(self.parts, (dead, middle_dead if middle_dead is not None else no_dead, no_dead),
                                 strict=True):  # fmt: skip
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
            df = None
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
        """(the term's id in each part, -1 where absent; live document frequency; idf as rank-bm25 uses it)."""
        key = term_key(token)
        ids = tuple(seg.term(key) for seg in self.parts)
        df = sum(self._part_df(part, term) for part, term in enumerate(ids) if term >= 0)
        idf = 0.0
        if df:
            idf = float(np.log(self.n_docs - df + 0.5) - np.log(df + 0.5))
            if idf < 0:
                idf = self.idf_floor()
        return ids, df, idf

    def unseen_idf(self) -> float:
        """The weight `idf_shares` gives a query term no live note uses: that of a term used once."""
        return max(float(np.log(self.n_docs - 1 + 0.5) - np.log(1 + 0.5)), EPSILON)

    def idf_shares(self, query_tokens: list[str], note_ids: list[int]) -> dict[int, float]:
        """For each note, the share of the query's idf weight carried by the query terms it contains.

        Each distinct query term counts once. A term no live note uses weighs as much as the
        rarest term a note could use (document frequency 1): a query about something the
        brain has never seen stays mostly unmatched. `brain.floors` compares the share with
        BRAIN_BM25_FLOOR.
        """
        distinct = list(dict.fromkeys(query_tokens))
        if not distinct or self.n_docs == 0 or not note_ids:
            return {note_id: 0.0 for note_id in note_ids}
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
                    has_term |= (positions >= 0) & np.isin(positions, docs)
            matched[has_term] += weight
        return {int(note_id): float(matched[i] / total) if total > 0 else 0.0 for i, note_id in enumerate(note_ids)}

    def rank(
        self,
        query_tokens: list[str],
        *,
        limit: int,
        wing: str | None = None,
        hall: str | None = None,
        status: str | None = None,
    ) -> list[tuple[int, float]]:
        """(note_id, score) of the best `limit` notes that match at least one token, best first."""
        return self.rank_with_shares(query_tokens, limit=limit, wing=wing, hall=hall, status=status, shares=False)[0]

    def rank_with_shares(
        self,
        query_tokens: list[str],
        *,
        limit: int,
        wing: str | None = None,
        hall: str | None = None,
        status: str | None = None,
        shares: bool = True,
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """`rank()`, and (`shares`) each ranked note's `idf_shares()` from the same pass over the postings."""
        if self.n_docs == 0 or limit <= 0:
            return [], {}
        parts = [(seg, alive) for seg, alive in zip(self.parts, self.alives, strict=True)]
        scores = [np.zeros(len(seg), dtype=np.float64) for seg in self.parts]
        matched = [np.zeros(len(seg), dtype=bool) for seg in self.parts]
        weights = [np.zeros(len(seg), dtype=np.float64) for seg in self.parts] if shares else None
        total_weight = 0.0
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
            for index, ((seg, _), term) in enumerate(zip(parts, ids, strict=True)):
                if term < 0:
                    continue
                start, end = seg.offsets[term], seg.offsets[term + 1]
                docs = seg.post_docs[start:end]
                tf = seg.post_tfs[start:end].astype(np.float64)
                # rank-bm25's expression, term for term (the length term precomputed).
                scores[index][docs] += idf * (tf * (K1 + 1) / (tf + norms[index][docs]))
                matched[index][docs] = True
                if weight:
                    weights[index][docs] += weight
        found_ids, found_scores, found_weights = [], [], []
        for index, (seg, alive) in enumerate(parts):
            seg_matched = matched[index]
            if alive is not None:
                seg_matched &= alive
            candidates = np.flatnonzero(seg_matched)
            # Filters compare small integer codes, not strings: cheap even with 100,000 candidates.
            for codes, value in ((seg.status_codes, status), (seg.wing_codes, wing), (seg.hall_codes, hall)):
                if value is not None:
                    candidates = candidates[codes[candidates] == seg.code(value)]
            found_ids.append(seg.note_ids[candidates])
            found_scores.append(scores[index][candidates])
            if weights is not None:
                found_weights.append(weights[index][candidates])
        ids, cand_scores = np.concatenate(found_ids), np.concatenate(found_scores)
        if len(ids) == 0:
            return [], {}
        top = np.arange(len(ids))
        if len(ids) > limit:
            # Everything scoring at least the limit-th best: notes tied at the cut all compete.
            cut = np.partition(cand_scores, len(ids) - limit)[len(ids) - limit]
            top = np.flatnonzero(cand_scores >= cut)
        # Best score first; ties by note id, so results are stable (and the same as a full rebuild's).
        order = top[np.lexsort((ids[top], -cand_scores[top]))][:limit]
        ranking = [(int(ids[i]), float(cand_scores[i])) for i in order]
        note_shares: dict[int, float] = {}
        if weights is not None:
            cand_weights = np.concatenate(found_weights)
            note_shares = {
                int(ids[i]): float(cand_weights[i] / total_weight) if total_weight > 0 else 0.0 for i in order
            }
        return ranking, note_shares


EMPTY_CORPUS = ""


def build_index(rows: Iterable[tuple], version: int = 0) -> Snapshot:
    """A one-segment snapshot of `rows` — (id, title, body, status, wing, hall) — for tests and benchmarks."""
    base = segment_from_rows((row[:6] for row in rows), version)
    return Snapshot(version=version, corpus_id=EMPTY_CORPUS, base=base, dead=np.zeros(0, np.int64),
                    delta=segment_from_docs([], version))  # fmt: skip


# -- the process's live index ---------------------------------------------------------------


class CorpusGap(Exception):
    """The change log does not cover the versions since the snapshot: only a full build is exact."""


class LiveIndex:
    """The process's index: a base segment, the notes changed since, and the snapshot queries use."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # held while changes are applied; queries never take it on the fast path
        self.snapshot: Snapshot | None = None
        self.corpus_id: str | None = None
        self.base: Segment | None = None
        self.version = 0  # every change up to this version is applied
        self.changed: dict[int, int] = {}  # note id → version of its latest change since the base
        self.delta_docs: dict[int, DocTerms] = {}  # the changed notes that are searchable now
        # The middle segment holds delta_docs as of its last build; a note changed since is in the small delta.
        self.middle: Segment | None = None
        self.middle_versions: dict[int, int] = {}  # note id → the version of it the middle holds
        self.merging: threading.Thread | None = None
        self.checked_at = 0.0
        self.local_writes_seen = -1

    # -- reading the database --

    def catch_up(self, version: int, corpus_id: str) -> None:
        """Apply every logged change up to at least `version` (caller holds the lock)."""
        if self.base is None or corpus_id != self.corpus_id:
            self._start_over(corpus_id)
        if version <= self.version and self.snapshot is not None:
            return
        try:
            self._apply_changes(version)
        except CorpusGap:
            self._start_over(corpus_id, from_scratch=True)
            self._apply_changes(version)

    def _apply_changes(self, target: int) -> None:
        rows = list(NoteChange.objects.filter(version__gt=self.version).order_by("version")
                    .values_list("version", "note_id"))  # fmt: skip
        expected = self.version + 1
        latest: dict[int, int] = {}
        for version, note_id in rows:
            if version > expected or note_id is None:  # pruned, or a bulk load logged as "everything"
                raise CorpusGap(version)
            expected = version + 1
            latest[note_id] = version
        if expected - 1 < target:
            raise CorpusGap(target)
        if not latest:
            self._publish()
            return
        docs: dict[int, DocTerms] = {}
        ids = list(latest)
        for start in range(0, len(ids), FETCH_BATCH):
            for row in Note.objects.searchable().filter(id__in=ids[start : start + FETCH_BATCH]).values_list(
                "id", "title", "body", "status", "wing", "hall"
            ):
                docs[row[0]] = doc_terms(*row)
        for note_id, version in latest.items():
            self.changed[note_id] = version
            self.delta_docs.pop(note_id, None)
            if note_id in docs:
                self.delta_docs[note_id] = docs[note_id]
        self.version = expected - 1
        self._publish()

    def _start_over(self, corpus_id: str, *, from_scratch: bool = False) -> None:
        """A base for `corpus_id`: the newest one shared on disk if it is usable, else a full build."""
        self.corpus_id = corpus_id
        self.changed, self.delta_docs = {}, {}
        self.middle, self.middle_versions = None, {}
        directory = shared_dir(corpus_id)
        with _file_lock(directory):
            base = None if from_scratch else _newest_on_disk(directory, BrainVersion.current())
            if base is None:
                base = self._full_build()
                if directory is not None and len(base) >= _setting("BRAIN_BM25_SHARE_MIN_NOTES", 5000):
                    base = load_segment(save_segment(base, directory, corpus_id))
                    _forget_old_bases(directory, keep=base.path)
                give_back_freed_memory()  # the build's scratch arrays (and the private copy, once mapped)
        self.base = base
        self.version = base.version
        self._publish()

    def _full_build(self) -> Segment:
        started = time.perf_counter()
        # The version is read before the rows: a write landing in between is in the change
        # log above this version, so it is applied again on top (idempotent), never lost.
        version = BrainVersion.current()
        ids = list(Note.objects.searchable().order_by("id").values_list("id", flat=True))

        def rows():
            for start in range(0, len(ids), FETCH_BATCH):
                yield from Note.objects.searchable().filter(id__in=ids[start : start + FETCH_BATCH]).order_by(
                    "id"
                ).values_list("id", "title", "body", "status", "wing", "hall")

        segment = segment_from_rows(rows(), version)
        stats.full_builds += 1
        logger.info("BM25 base segment: %d notes built in %.2f s", len(segment), time.perf_counter() - started)
        return segment

    # -- snapshots and merges --

    def _publish(self) -> None:
        """A new snapshot after changes: tokenises nothing, and rebuilds only the small delta segment.

        The notes changed since the middle segment was built go into the delta; past
        BRAIN_BM25_FRESH_NOTES of them, the middle is rebuilt from every changed note and the
        delta starts empty. A write thus costs a refresh of a few dozen notes, not of every
        note changed since the last merge (up to BRAIN_BM25_MERGE_NOTES).
        """
        base = self.base
        fresh = [d for i, d in self.delta_docs.items() if self.middle_versions.get(i) != self.changed[i]]
        if len(fresh) > _setting("BRAIN_BM25_FRESH_NOTES", 64):
            self.middle = segment_from_docs(sorted(self.delta_docs.values(), key=lambda d: d.note_id), self.version)
            self.middle_versions = {i: self.changed[i] for i in self.delta_docs}
            fresh = []
            stats.middle_builds += 1
        delta = segment_from_docs(sorted(fresh, key=lambda d: d.note_id), self.version)
        dead = base.positions(self.changed) if self.changed else np.zeros(0, dtype=np.int64)
        middle_dead = None
        if self.middle is not None:
            # The middle's copies of notes changed again since, or removed, are tombstoned.
            superseded = [i for i, v in self.middle_versions.items() if self.changed.get(i) != v]
            middle_dead = self.middle.positions(superseded) if superseded else None
        self.snapshot = Snapshot(version=self.version, corpus_id=self.corpus_id, base=base, dead=dead, delta=delta,
                                 middle=self.middle, middle_dead=middle_dead)  # fmt: skip
        stats.refreshes += 1
        if len(self.changed) >= _setting("BRAIN_BM25_MERGE_NOTES", 1000) and self.merging is None:
            self.merging = threading.Thread(target=self._merge_in_background, name="bm25-merge", daemon=True)
            self.merging.start()

    def _merge_in_background(self) -> None:
        try:
            self.merge()
        except Exception:  # noqa: BLE001 — a failed merge leaves a bigger delta, never a wrong answer
            logger.exception("BM25 background merge failed")
        finally:
            self.merging = None
            connection.close()  # this thread's own connection

    def merge(self) -> None:
        """Fold the changed notes into a new base (shared on disk when large), then swap it in."""
        with self.lock:  # the snapshot and the changed notes it holds, as one
            snapshot = self.snapshot
            if snapshot is None:
                return
            changed_docs = sorted(self.delta_docs.values(), key=lambda d: d.note_id)
        directory = shared_dir(snapshot.corpus_id)
        with _file_lock(directory):
            # Another process on this machine may have merged already: use its base if it is not ahead of us.
            new_base = _newest_on_disk(directory, snapshot.version)
            if new_base is None or new_base.version <= snapshot.base.version:
                delta = segment_from_docs(changed_docs, snapshot.version)
                new_base = merge_segments(snapshot.base, snapshot.alive, delta, snapshot.version)
                if directory is not None and len(new_base) >= _setting("BRAIN_BM25_SHARE_MIN_NOTES", 5000):
                    new_base = load_segment(save_segment(new_base, directory, snapshot.corpus_id))
                    _forget_old_bases(directory, keep=new_base.path)
                give_back_freed_memory()
        with self.lock:
            if self.base is not snapshot.base or self.corpus_id != snapshot.corpus_id:
                return  # started over meanwhile
            if new_base.version > self.version:
                return  # ahead of this process: picked up by its next merge
            self.base = new_base
            self.changed = {i: v for i, v in self.changed.items() if v > new_base.version}
            self.delta_docs = {i: d for i, d in self.delta_docs.items() if i in self.changed}
            self.middle, self.middle_versions = None, {}
            self._publish()
        stats.merges += 1


FETCH_BATCH = 2000


def _setting(name: str, default):
    return getattr(settings, name, default)


def shared_dir(corpus_id: str | None) -> Path | None:
    """Where base segments of this corpus are shared, or None (BRAIN_BM25_DIR empty: in memory only)."""
    root = _setting("BRAIN_BM25_DIR", "")
    if not root or not corpus_id:
        return None
    return Path(root) / corpus_id


class _file_lock:
    """One process at a time builds or merges a shared base on this machine; the others then map it.

    One lock file for the whole BRAIN_BM25_DIR: corpora are rarely more than one per machine, and
    a folder per corpus is made only when a base is written into it.
    """

    def __init__(self, directory: Path | None) -> None:
        self.root = directory.parent if directory is not None else None
        self.handle = None

    def __enter__(self):
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
            self.handle = open(self.root / ".lock", "w")  # noqa: SIM115
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()


def _newest_on_disk(directory: Path | None, max_version: int) -> Segment | None:
    if directory is None or not directory.exists():
        return None
    candidates = sorted(
        (p for p in directory.glob("base-*") if p.is_dir() and int(p.name[5:]) <= max_version), reverse=True
    )
    for path in candidates:
        try:
            return load_segment(path)
        except (OSError, ValueError, KeyError):
            logger.warning("unreadable BM25 segment %s; ignored", path)
    return None


def _forget_old_bases(directory: Path, *, keep: Path | None, keep_count: int = 2) -> None:
    """Delete all but the newest bases (a process still mapping one keeps its pages until it lets go)."""
    bases = sorted((p for p in directory.glob("base-*") if p.is_dir()), reverse=True)
    for path in bases[keep_count:]:
        if path != keep:
            shutil.rmtree(path, ignore_errors=True)


_live = LiveIndex()
_local_writes = 0  # bumped by this process's writes: its next search checks the version at once


def note_local_write() -> None:
    """Called by `BrainVersion.bump()` (and again on commit): read-your-writes for this process."""
    global _local_writes
    _local_writes += 1


def current_index() -> Snapshot:
    """The snapshot to rank against: the live corpus as of a version no older than
    BRAIN_BM25_CHECK_SECONDS, and never older than this process's own last write."""
    live = _live
    snapshot = live.snapshot
    now = time.monotonic()
    writes = _local_writes
    if (
        snapshot is not None
        and writes == live.local_writes_seen
        and now - live.checked_at < _setting("BRAIN_BM25_CHECK_SECONDS", 0.25)
    ):
        return snapshot
    version, corpus_id = BrainVersion.current_with_corpus()
    if snapshot is None or snapshot.corpus_id != corpus_id or snapshot.version < version:
        with live.lock:
            live.catch_up(version, corpus_id)
            snapshot = live.snapshot
    live.checked_at, live.local_writes_seen = now, writes
    return snapshot


def reset() -> None:
    """Forget the process's index (tests, and the eval command between datasets)."""
    global _live
    with _live.lock:
        _live = LiveIndex()


def live_index() -> LiveIndex:
    return _live
