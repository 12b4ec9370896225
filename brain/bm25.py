"""The in-memory BM25 index over title + body.

Scores are exactly rank-bm25's `BM25Okapi` (same idf with the epsilon floor
for very common terms, same length normalisation), computed from an inverted
index with numpy instead of one Python dict lookup per note per query term:
at 100,000 notes rank-bm25 needs seconds per query, this needs milliseconds.
`tests/search/test_bm25_index.py` checks the two agree.

One index per process, rebuilt only when `BrainVersion` moved since it was
built (`current_index()`); a search costs one cheap query to read the version.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from array import array
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import snowballstemmer

from brain.models import BrainVersion, Note

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

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if not word.isascii():
        return word
    return _STEMMER.stemWord(word)


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


def note_text(title: str, body: str) -> str:
    return "\n".join([title] * TITLE_REPEAT + [body])


@dataclass
class BM25Index:
    """An immutable inverted index; `version` is the BrainVersion it was built at."""

    version: int
    note_ids: np.ndarray  # int64, position → Note.id
    statuses: np.ndarray  # int32 codes of the values in `codes`
    wings: np.ndarray
    halls: np.ndarray
    codes: dict[str, int]
    vocabulary: dict[str, int]
    idf: np.ndarray  # per term id
    offsets: np.ndarray  # CSR: postings of term t are [offsets[t], offsets[t+1])
    posting_docs: np.ndarray
    posting_weights: np.ndarray  # tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))
    build_seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.note_ids)

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
        n = len(self.note_ids)
        if n == 0 or limit <= 0:
            return []
        scores = np.zeros(n, dtype=np.float64)
        matched = np.zeros(n, dtype=bool)
        for token in query_tokens:  # a repeated token counts again, as in rank-bm25
            term = self.vocabulary.get(token)
            if term is None:
                continue
            start, end = self.offsets[term], self.offsets[term + 1]
            docs = self.posting_docs[start:end]
            scores[docs] += self.idf[term] * self.posting_weights[start:end]
            matched[docs] = True
        candidates = np.flatnonzero(matched)
        # Filters compare small integer codes, not strings: cheap even with 100,000 candidates.
        for codes, value in ((self.statuses, status), (self.wings, wing), (self.halls, hall)):
            if value is not None:
                code = self.codes.get(value, -1)
                candidates = candidates[codes[candidates] == code]
        if len(candidates) == 0:
            return []
        cand_scores = scores[candidates]
        if len(candidates) > limit:
            top = np.argpartition(-cand_scores, limit - 1)[:limit]
        else:
            top = np.arange(len(candidates))
        # Best score first; ties by note id so results are stable.
        order = sorted(top, key=lambda i: (-cand_scores[i], self.note_ids[candidates[i]]))
        return [(int(self.note_ids[candidates[i]]), float(cand_scores[i])) for i in order]


class TokenCache:
    """Each note's term counts, kept between rebuilds and keyed by its content hash.

    Tokenising (NFKC, stemming) is most of an index build; after a write only
    the notes whose hash changed are read and tokenised again. Term ids come
    from a vocabulary that only grows, so cached counts stay valid.
    """

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.notes: dict[int, tuple[str, array, array, int]] = {}  # id → (hash, term ids, tfs, length)
        self.tokenised = 0  # notes tokenised so far (tests and benchmarks read it)

    def counts(self, text: str) -> tuple[array, array, int]:
        tokens = tokenize(text)
        self.tokenised += 1
        terms, tfs = array("i"), array("i")
        for token, tf in Counter(tokens).items():
            terms.append(self.vocabulary.setdefault(token, len(self.vocabulary)))
            tfs.append(tf)
        return terms, tfs, len(tokens)

    def lookup(self, note_id: int, content_hash: str) -> tuple[array, array, int] | None:
        cached = self.notes.get(note_id)
        if cached is None or not content_hash or cached[0] != content_hash:
            return None
        return cached[1], cached[2], cached[3]

    def store(self, note_id: int, content_hash: str, counts: tuple[array, array, int]) -> None:
        if content_hash:
            self.notes[note_id] = (content_hash, *counts)

    def forget_except(self, live_ids: set[int]) -> None:
        for note_id in [i for i in self.notes if i not in live_ids]:
            del self.notes[note_id]


def build_index(rows, version: int, cache: TokenCache | None = None) -> BM25Index:
    """`rows`: iterable of (id, title, body, status, wing, hall[, content_hash]).

    With a `cache`, `title` and `body` may be None for a note whose content
    hash the cache already holds.
    """
    import time

    started = time.perf_counter()
    cache = cache or TokenCache()
    ids: list[int] = []
    statuses: list[str] = []
    wings: list[str] = []
    halls: list[str] = []
    lengths: list[int] = []
    # Typed arrays, not lists: 100,000 notes make ~10 million postings.
    term_ids = array("i")
    doc_ids = array("i")
    tfs = array("i")
    for doc, row in enumerate(rows):
        note_id, title, body, status, wing, hall = row[:6]
        content_hash = row[6] if len(row) > 6 else ""
        counts = cache.lookup(note_id, content_hash)
        if counts is None:
            counts = cache.counts(note_text(title, body))
            cache.store(note_id, content_hash, counts)
        note_terms, note_tfs, length = counts
        ids.append(note_id)
        statuses.append(status)
        wings.append(wing)
        halls.append(hall)
        lengths.append(length)
        term_ids.extend(note_terms)
        tfs.extend(note_tfs)
        doc_ids.extend([doc] * len(note_terms))
    vocabulary = cache.vocabulary

    n_docs = len(ids)
    doc_len = np.asarray(lengths, dtype=np.float64)
    avgdl = float(doc_len.sum() / n_docs) if n_docs else 0.0
    terms = np.frombuffer(term_ids, dtype=np.int32).astype(np.int64)
    docs = np.frombuffer(doc_ids, dtype=np.int32).astype(np.int64)
    tf = np.frombuffer(tfs, dtype=np.int32).astype(np.float64)
    order = np.argsort(terms, kind="stable")
    terms, docs, tf = terms[order], docs[order], tf[order]
    n_terms = len(vocabulary)
    doc_freq = np.bincount(terms, minlength=n_terms).astype(np.float64)
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(doc_freq.astype(np.int64), out=offsets[1:])

    # rank-bm25's BM25Okapi._calc_idf, vectorised.
    idf = np.log(n_docs - doc_freq + 0.5) - np.log(doc_freq + 0.5) if n_terms else np.zeros(0)
    # The cache's vocabulary may hold terms no current note uses; rank-bm25's
    # mean idf is over the corpus's own terms, so leave those out of it.
    live = doc_freq > 0
    n_live = int(live.sum())
    if n_live:
        average_idf = float(idf[live].sum() / n_live)
        # rank-bm25 floors negative idf at ε·mean idf. In a tiny brain (a handful of notes)
        # the mean itself is negative, which would rank a note *lower* the more often it
        # uses the query word; there the floor is ε instead. Other corpora score identically.
        idf[idf < 0] = EPSILON * average_idf if average_idf > 0 else EPSILON
    if avgdl > 0:
        weights = tf * (K1 + 1) / (tf + K1 * (1 - B + B * doc_len[docs] / avgdl))
    else:
        weights = np.zeros(0)

    codes: dict[str, int] = {}
    return BM25Index(
        version=version,
        note_ids=np.asarray(ids, dtype=np.int64),
        statuses=np.asarray([codes.setdefault(v, len(codes)) for v in statuses], dtype=np.int32),
        wings=np.asarray([codes.setdefault(v, len(codes)) for v in wings], dtype=np.int32),
        halls=np.asarray([codes.setdefault(v, len(codes)) for v in halls], dtype=np.int32),
        codes=codes,
        vocabulary=vocabulary,
        idf=idf,
        offsets=offsets,
        posting_docs=docs,
        posting_weights=weights,
        build_seconds=time.perf_counter() - started,
    )


_lock = threading.Lock()
_index: BM25Index | None = None
builds = 0  # how many times this process built the index (tests read it)


def current_index() -> BM25Index:
    """The process's index, rebuilt first if the corpus version moved."""
    global _index, builds
    version = BrainVersion.current()
    index = _index
    if index is not None and index.version == version:
        return index
    with _lock:
        if _index is not None and _index.version == version:
            return _index
        # The version is read before the rows: a write landing in between
        # bumps it again, so the next search rebuilds rather than keeping a stale index.
        _index = build_index(_rows_for_build(), version, _token_cache)
        builds += 1
        return _index


_token_cache = TokenCache()
FETCH_BATCH = 5000


def _rows_for_build():
    """Every searchable note's fields, with title and body read only for notes
    whose content hash the token cache does not already hold."""
    meta = list(Note.objects.searchable().order_by("id").values_list("id", "status", "wing", "hall", "content_hash"))
    _token_cache.forget_except({row[0] for row in meta})
    stale = [row[0] for row in meta if _token_cache.lookup(row[0], row[4]) is None]
    texts: dict[int, tuple[str, str]] = {}
    for start in range(0, len(stale), FETCH_BATCH):
        batch = stale[start : start + FETCH_BATCH]
        texts.update((i, (t, b)) for i, t, b in Note.objects.filter(id__in=batch).values_list("id", "title", "body"))
    for note_id, status, wing, hall, content_hash in meta:
        title, body = texts.get(note_id, (None, None))
        if title is None and _token_cache.lookup(note_id, content_hash) is None:
            continue  # archived or deleted between the two reads; the version moved, a rebuild follows
        yield note_id, title, body, status, wing, hall, content_hash


def reset() -> None:
    """Forget the cached index (tests, and the eval command between datasets)."""
    global _index, _token_cache
    with _lock:
        _index = None
        _token_cache = TokenCache()
