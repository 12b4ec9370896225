"""The BM25 index over title + body, kept fresh incrementally.

One module per concern: `text` (tokenizing), `segments` (inverted indexes), `storage`
(segments on disk, shared between processes), `snapshot` (scoring), `merging` (folding a
delta into a new base) and `live` (the process's index and its freshness). Import from
`brain.bm25`; the names below are its public surface.

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

from brain.bm25.counters import Stats, stats
from brain.bm25.live import CorpusGap, LiveIndex, current_index, live_index, note_local_write, reset
from brain.bm25.merging import merge_segments
from brain.bm25.segments import (
    SEGMENT_ARRAYS,
    DocTerms,
    Segment,
    build_segment,
    doc_terms,
    segment_from_docs,
    segment_from_rows,
)
from brain.bm25.snapshot import EMPTY_CORPUS, EPSILON, K1, B, QueryScores, Snapshot, build_index
from brain.bm25.storage import load_segment, save_segment, shared_dir
from brain.bm25.text import (
    CJK_RE,
    STOPWORDS,
    TITLE_REPEAT,
    WORD_RE,
    _stem,
    note_text,
    term_key,
    tokenize,
    without_markup,
    word_tokens,
)

__all__ = [
    "B",
    "CJK_RE",
    "EMPTY_CORPUS",
    "EPSILON",
    "K1",
    "SEGMENT_ARRAYS",
    "STOPWORDS",
    "TITLE_REPEAT",
    "WORD_RE",
    "CorpusGap",
    "DocTerms",
    "LiveIndex",
    "QueryScores",
    "Segment",
    "Snapshot",
    "Stats",
    "_stem",
    "build_index",
    "build_segment",
    "current_index",
    "doc_terms",
    "live_index",
    "load_segment",
    "merge_segments",
    "note_local_write",
    "note_text",
    "reset",
    "save_segment",
    "segment_from_docs",
    "segment_from_rows",
    "shared_dir",
    "stats",
    "term_key",
    "tokenize",
    "without_markup",
    "word_tokens",
]
