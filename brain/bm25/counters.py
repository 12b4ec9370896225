"""Counters of the BM25 index's work, read by tests and benchmarks."""

from __future__ import annotations


class Stats:
    """Counters tests and benchmarks read; never used for decisions."""

    def __init__(self) -> None:
        self.tokenised = 0  # notes tokenised by this process
        self.full_builds = 0  # whole-corpus builds from the database
        self.loads = 0  # base segments memory-mapped from BRAIN_BM25_DIR
        self.merges = 0  # background merges of base + delta
        self.refreshes = 0  # snapshots published after changes
        self.middle_builds = 0  # middle segments rebuilt from every changed note (past BRAIN_BM25_FRESH_NOTES)
        self.diff_catch_ups = 0  # bases brought up to the database by comparing fingerprints (a pruned change log)
        self.pruned_queries = 0  # top-k rankings done with dynamic pruning (brain.bm25.pruning)
        self.postings_scored = 0  # postings those rankings scored
        self.postings_skipped = 0  # postings of their query terms they never looked at
        self.maxscore_rounds = 0  # of those, MaxScore passes over the blocks left once θ was known
        self.whole_large_parts = 0  # parts larger than pruning.SMALL_PART_DOCS they scored whole (few postings)


stats = Stats()
