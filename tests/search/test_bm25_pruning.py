"""Top-k with dynamic pruning ranks exactly as scoring every posting, and skips postings doing it.

A generated corpus large enough for the base segment to be cut into many blocks, with common
terms long enough to carry stored block bounds, notes duplicated so that scores tie at the cut
(ties go to the lower note id), tombstoned base documents and a delta segment, as a live index
has them. 1,000 random queries, each ranked both ways with a random filter.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from brain import bm25
from brain.bm25 import pruning
from brain.bm25.segments import BLOCK_DOCS, LONG_POSTINGS

VOCABULARY = [f"w{rank}x" for rank in range(3000)]  # tokenise to themselves (no stopword, no stem change)
WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
WINGS = ["eng", "ops", "people"]
HALLS = ["", "db", "howto"]
STATUSES = ["wiki", "wiki", "raw"]


def note_rows(rng: random.Random, count: int) -> list[tuple]:
    """(id, title, body, status, wing, hall), ids sparse and shuffled; every 20th note repeats an earlier one's
    text (same length, same terms: the same score)."""
    ids = rng.sample(range(1, count * 5), count)
    rows: list[tuple] = []
    for note_id in ids:
        if rows and rng.random() < 0.05:
            _, title, body, *_ = rng.choice(rows)
        else:
            title = " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(2, 5)))
            body = " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(10, 60)))
        rows.append((note_id, title, body, rng.choice(STATUSES), rng.choice(WINGS), rng.choice(HALLS)))
    return rows


def query(rng: random.Random) -> list[str]:
    words = rng.choices(VOCABULARY[:400], k=rng.randint(1, 4))
    if rng.random() < 0.1:
        words.append(words[0])  # a repeated word counts twice, as in rank-bm25
    if rng.random() < 0.05:
        words.append("neverseenword")
    return bm25.tokenize(" ".join(words))


@pytest.fixture(scope="module")
def snapshot() -> bm25.Snapshot:
    rng = random.Random(34)
    rows = note_rows(rng, 43_000)
    base_rows, later = rows[:42_000], rows[42_000:]
    base = bm25.segment_from_rows(base_rows, 1)
    # Notes changed since the base was built: their base copies are tombstoned, their new text is in the delta.
    changed = rng.sample(base_rows, 300)
    edited = [(row[0], row[1], "w0x w1x " + row[2], "wiki", row[4], row[5]) for row in changed]
    delta = bm25.segment_from_docs(sorted((bm25.doc_terms(*row) for row in edited + later), key=lambda d: d.note_id), 2)
    removed = rng.sample(base_rows, 200)
    dead = base.positions([row[0] for row in changed + removed])
    return bm25.Snapshot(version=2, corpus_id="", base=base, dead=np.sort(dead), delta=delta)


def test_the_generated_base_is_large_enough_for_block_bounds(snapshot):
    assert snapshot.base.blocks >= 10 and len(snapshot.base) > 4 * BLOCK_DOCS
    # More blocks than the seed batches score before MaxScore takes the rest.
    seeded = sum(
        min(pruning.FIRST_BATCH_BLOCKS << batch, pruning.MAX_BATCH_BLOCKS) for batch in range(pruning.SEED_BATCHES)
    )
    assert snapshot.base.blocks > seeded + 8
    assert len(snapshot.base.block_terms) >= 20  # terms with LONG_POSTINGS postings or more carry stored bounds
    assert np.diff(snapshot.base.offsets)[snapshot.base.block_terms].min() >= LONG_POSTINGS


@pytest.fixture(params=["default seeding", "one block of seed"])
def seeding(request, monkeypatch):
    """As configured, and with θ taken from a single block: more of the base then goes through MaxScore."""
    if request.param == "one block of seed":
        monkeypatch.setattr(pruning, "FIRST_BATCH_BLOCKS", 1)
        monkeypatch.setattr(pruning, "SEED_BATCHES", 1)
    return request.param


def test_pruned_and_exhaustive_top_10_agree_on_1000_random_queries_and_pruning_skips_postings(snapshot, seeding):
    rng = random.Random(1000)
    skipped, scored, rounds = bm25.stats.postings_skipped, bm25.stats.postings_scored, bm25.stats.maxscore_rounds
    ties_at_the_cut = 0
    for _ in range(1000):
        tokens = query(rng)
        filters = rng.choice(
            [
                {},
                {},
                {"status": "wiki"},
                {"status": "raw"},
                {"wing": rng.choice(WINGS)},
                {"wing": "eng", "hall": "db", "status": "wiki"},
                {"hall": "nohall"},
            ]
        )
        exhaustive = snapshot.rank(tokens, limit=10, exhaustive=True, **filters)
        pruned = snapshot.rank(tokens, limit=10, exhaustive=False, **filters)
        assert pruned == exhaustive, (tokens, filters)  # the same notes, order and scores, to the last bit
        every = snapshot.rank(tokens, limit=11, exhaustive=True, **filters)
        ties_at_the_cut += len(every) == 11 and every[9][1] == every[10][1]
    assert ties_at_the_cut > 0  # some cuts fell inside a tie: the note id decided, the same way both ways
    assert bm25.stats.postings_skipped > skipped
    assert bm25.stats.postings_scored > scored
    assert bm25.stats.maxscore_rounds > rounds  # the blocks left once θ was known went through MaxScore


def test_pruned_rankings_agree_at_the_depths_search_asks_for_with_the_same_shares(snapshot):
    rng = random.Random(7)
    for _ in range(100):
        tokens = query(rng)
        limit = rng.choice([1, 30, 50, 120])
        status = rng.choice(["wiki", "raw", None])
        exhaustive = snapshot.rank_with_shares(tokens, limit=limit, status=status, exhaustive=True)
        pruned = snapshot.rank_with_shares(tokens, limit=limit, status=status, exhaustive=False)
        assert pruned[0] == exhaustive[0]
        assert pruned[1] == exhaustive[1]  # the relevance floor's shares too


def test_pruned_rankings_count_the_same_query_terms_per_note_for_the_evidence_floor(snapshot):
    rng = random.Random(11)
    for _ in range(100):
        tokens = query(rng)
        limit = rng.choice([1, 30, 120])
        exhaustive = snapshot.rank_with_evidence(tokens, limit=limit, status="wiki", exhaustive=True)
        pruned = snapshot.rank_with_evidence(tokens, limit=limit, status="wiki", exhaustive=False)
        assert pruned == exhaustive


def test_a_limit_larger_than_the_matches_returns_every_match_both_ways(snapshot):
    tokens = bm25.tokenize("w2999x w2998x")
    exhaustive = snapshot.rank(tokens, limit=5000, exhaustive=True)
    assert 0 < len(exhaustive) < 5000
    assert snapshot.rank(tokens, limit=5000, exhaustive=False) == exhaustive


def test_the_setting_chooses_the_path_and_both_give_the_same_answer(snapshot, settings):
    tokens = bm25.tokenize("w0x w5x w77x")
    settings.BRAIN_BM25_PRUNING = True
    pruned_before = bm25.stats.pruned_queries
    pruned = snapshot.rank(tokens, limit=10)
    assert bm25.stats.pruned_queries == pruned_before + 1
    settings.BRAIN_BM25_PRUNING = False
    assert snapshot.rank(tokens, limit=10) == pruned
    assert bm25.stats.pruned_queries == pruned_before + 1


def test_rare_terms_are_scored_whole_and_common_ones_through_the_blocks_with_the_same_answer(snapshot):
    rare = bm25.tokenize("w2500x w2990x w1999x")
    common = bm25.tokenize("w0x w1x")
    base_postings = {
        name: sum(int(np.diff(snapshot.base.offsets)[snapshot.base.term(bm25.term_key(t))]) for t in tokens)
        for name, tokens in (("rare", rare), ("common", common))
    }
    limit = min(pruning.WHOLE_POSTINGS_PER_BLOCK * snapshot.base.blocks, pruning.WHOLE_POSTINGS_MAX)
    assert 0 < base_postings["rare"] <= limit < base_postings["common"]
    assert len(snapshot.base) > pruning.SMALL_PART_DOCS
    whole, skipped = bm25.stats.whole_large_parts, bm25.stats.postings_skipped
    assert snapshot.rank(rare, limit=10, exhaustive=False) == snapshot.rank(rare, limit=10, exhaustive=True)
    assert bm25.stats.whole_large_parts == whole + 1  # the base: its few postings scored at once, no block visited
    assert bm25.stats.postings_skipped == skipped
    assert snapshot.rank(common, limit=10, exhaustive=False) == snapshot.rank(common, limit=10, exhaustive=True)
    assert bm25.stats.whole_large_parts == whole + 1
    assert bm25.stats.postings_skipped > skipped  # the base's blocks below θ were skipped
