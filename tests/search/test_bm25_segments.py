"""The segmented BM25 index: exact over the live corpus, fresh after every write, never rebuilt for one.

The equivalence test drives 1,000 random writes and removals through the
brain's actions, with small merge thresholds so that background merges and
memory-mapped shared bases happen along the way, and compares the live
index with a full rebuild and with rank-bm25 at checkpoints.
"""

from __future__ import annotations

import random
import sys
import threading

import pytest
from rank_bm25 import BM25Okapi

from brain import bm25
from brain.actions import (
    do_archive_note,
    do_edit_note,
    do_ingest_note,
    do_promote_note,
    do_reject_note,
    do_write_raw_note,
)
from brain.indexing import bump_brain_version
from brain.models import Note, NoteChange, NoteStatus
from brain.search import search

WORDS = (
    "postgres vacuum index query planner latency cache worker queue retry timeout deploy rollback schema "
    "migration token secret review search vector embedding chunk heading session note wiki raw archive"
).split() + [f"term{i}" for i in range(400)]
WEIGHTS = [1 / (rank + 1) for rank in range(len(WORDS))]
WINGS = ["eng", "ops", "people"]
HALLS = ["", "db", "howto"]


def text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(low, high)))


def live_rows() -> list[tuple]:
    return list(Note.objects.searchable().order_by("id").values_list("id", "title", "body", "status", "wing", "hall"))


def assert_same_as_full_rebuild(rng: random.Random, queries: int = 12) -> None:
    live = bm25.current_index()
    rows = live_rows()
    full = bm25.build_index(rows, version=live.version)
    assert len(live) == len(full) == len(rows)
    assert live.avgdl == pytest.approx(full.avgdl, rel=1e-12)
    held = {row[0]: set(bm25.tokenize(bm25.note_text(row[1], row[2]))) for row in rows}
    for _ in range(queries):
        query = bm25.tokenize(text(rng, 1, 4))
        # brain_answer's wing weights (issue 45): each wing's notes, and how many of them hold each term, as the
        # live notes themselves say, through edits, moves between wings and removals.
        for wing in [*WINGS, ""]:
            members = [row[0] for row in rows if row[4] == wing]
            assert live.wing_size(wing) == full.wing_size(wing) == len(members)
            for term in dict.fromkeys(query):
                holding = sum(1 for note_id in members if term in held[note_id])
                assert live.wing_frequency(term, wing) == full.wing_frequency(term, wing) == holding, (term, wing)
        filters = rng.choice(
            [{}, {"status": "wiki"}, {"status": "raw"}, {"wing": rng.choice(WINGS)}, {"wing": "eng", "hall": "db"}]
        )
        ours = live.rank(query, limit=len(rows) or 1, **filters)
        theirs = full.rank(query, limit=len(rows) or 1, **filters)
        assert [note_id for note_id, _ in ours] == [note_id for note_id, _ in theirs]
        assert [score for _, score in ours] == pytest.approx([score for _, score in theirs], abs=1e-9)
        # The relevance floor's idf shares agree as well (the unseen term counts too).
        some = [row[0] for row in rng.sample(rows, min(20, len(rows)))] + [10**9]
        with_unseen = query + ["zzunseenword"]
        assert live.idf_shares(with_unseen, some) == pytest.approx(full.idf_shares(with_unseen, some), abs=1e-12)
        # The shares search() uses come from the ranking pass itself: the same figures.
        ranked, shares = live.rank_with_shares(with_unseen + query[:1], limit=30, **filters)
        assert [note_id for note_id, _ in ranked] == [
            note_id for note_id, _ in full.rank(with_unseen + query[:1], limit=30, **filters)
        ]
        assert set(shares) == {note_id for note_id, _ in ranked}
        expected = full.idf_shares(with_unseen, list(shares))  # a repeated term counts once in a share
        assert shares == pytest.approx(expected, abs=1e-12)


def assert_same_as_rank_bm25(rng: random.Random, queries: int = 8) -> None:
    live = bm25.current_index()
    rows = live_rows()
    reference = BM25Okapi([bm25.tokenize(bm25.note_text(t, b)) for _, t, b, *_ in rows], k1=bm25.K1, b=bm25.B)
    for _ in range(queries):
        query = bm25.tokenize(text(rng, 1, 4))
        expected = reference.get_scores(query)
        ours = dict(live.rank(query, limit=len(rows)))
        for position, row in enumerate(rows):
            assert ours.get(row[0], 0.0) == pytest.approx(expected[position], abs=1e-9)


@pytest.fixture
def small_merges(settings, tmp_path):
    """Merges every 40 changed notes, the middle segment rebuilt every 7, bases shared on disk from the first
    note: every path is taken."""
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_BM25_MERGE_NOTES = 40
    settings.BRAIN_BM25_FRESH_NOTES = 7
    settings.BRAIN_BM25_SHARE_MIN_NOTES = 0
    settings.BRAIN_BM25_DIR = str(tmp_path / "bm25")
    settings.BRAIN_BM25_CHECK_SECONDS = 60  # only this process writes: its own writes must make it look
    return settings


@pytest.mark.django_db
def test_results_equal_a_full_rebuild_and_rank_bm25_after_1000_random_writes_and_removals(small_merges):
    rng = random.Random(14)
    for i in range(60):
        do_ingest_note(
            title=text(rng, 1, 4),
            body=text(rng, 5, 60),
            wing=rng.choice(WINGS),
            hall=rng.choice(HALLS),
            slug=f"seed-{i}",
        )
    search("postgres")  # the first base segment
    builds, merges, middles = bm25.stats.full_builds, bm25.stats.merges, bm25.stats.middle_builds
    kinds = []
    for step in range(1000):
        live = list(Note.objects.searchable().values_list("id", "status"))
        notes = [note_id for note_id, _ in live]
        raws = [note_id for note_id, status in live if status == NoteStatus.RAW]
        kind = rng.choices(["ingest", "raw", "edit", "archive", "promote", "reject"], [3, 2, 4, 2, 1, 1])[0]
        if kind == "ingest" or not notes:
            do_ingest_note(
                title=text(rng, 1, 4),
                body=text(rng, 5, 60),
                wing=rng.choice(WINGS),
                hall=rng.choice(HALLS),
                slug=f"n-{step}",
            )
        elif kind == "raw":
            do_write_raw_note(title=text(rng, 1, 4), body=text(rng, 5, 60), slug=f"r-{step}")
        elif kind == "edit":
            do_edit_note(Note.objects.get(pk=rng.choice(notes)), body=text(rng, 3, 80))
        elif kind == "archive":
            do_archive_note(Note.objects.get(pk=rng.choice(notes)))
        elif kind == "promote" and raws:
            do_promote_note(Note.objects.get(pk=rng.choice(raws)), reviewer=None, wing=rng.choice(WINGS))
        elif kind == "reject" and raws:
            do_reject_note(Note.objects.get(pk=rng.choice(raws)), reviewer=None, reason="not useful")
        kinds.append(kind)
        if step % 7 == 0:
            bm25.current_index()  # queries in between: refreshes (and merges) happen along the way
        if step % 100 == 99:
            assert_same_as_full_rebuild(rng)
        if step % 250 == 249:
            assert_same_as_rank_bm25(rng)
    merging = bm25.live_index().merging
    if merging is not None:
        merging.join()
    assert_same_as_full_rebuild(rng, queries=30)
    assert_same_as_rank_bm25(rng, queries=15)
    assert {"ingest", "edit", "archive", "promote", "reject"} <= set(kinds)
    assert bm25.stats.full_builds == builds  # 1,000 writes, no whole-index rebuild
    assert bm25.stats.merges > merges  # the delta was merged into new bases in the background
    assert bm25.stats.middle_builds > middles  # and between merges, changes went through the middle segment
    assert bm25.live_index().base.path is not None  # …written under BRAIN_BM25_DIR and memory-mapped


@pytest.mark.django_db
def test_a_write_is_found_by_the_next_search_of_the_process_that_made_it(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_BM25_CHECK_SECONDS = 3600  # the version is not re-read on a timer: the write itself says so
    do_ingest_note(title="Vacuum", body="autovacuum thresholds", wing="eng")
    assert [h.title for h in search("autovacuum").hits] == ["Vacuum"]
    note = do_ingest_note(title="Replica lag", body="hot standby feedback", wing="eng")
    assert [h.slug for h in search("standby").hits] == [note.slug]
    do_edit_note(note, body="wal receiver")
    assert search("standby").hits == []
    assert [h.slug for h in search("receiver").hits] == [note.slug]
    do_archive_note(note)
    assert search("receiver").hits == []


@pytest.mark.django_db
def test_a_removed_note_stops_counting_in_the_statistics_at_once(settings):
    settings.BRAIN_EMBEDDER = "off"
    notes = [do_ingest_note(title=f"Note {i}", body="planner " * (i + 1), wing="eng") for i in range(5)]
    before = bm25.current_index()
    do_archive_note(notes[0])
    after = bm25.current_index()
    assert (len(before), len(after)) == (5, 4)
    assert after.tombstones == 1 and after.delta_notes == 0
    assert after.avgdl == pytest.approx(bm25.build_index(live_rows()).avgdl)


@pytest.mark.django_db
def test_merging_happens_in_a_background_thread_and_queries_keep_the_old_snapshot_meanwhile(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_BM25_MERGE_NOTES = 3
    settings.BRAIN_BM25_DIR = ""
    do_ingest_note(title="Base", body="autovacuum base note", wing="eng")
    search("autovacuum")
    live = bm25.live_index()
    started = threading.Event()
    release = threading.Event()
    original_merge = bm25.live.merge_segments  # the merge the live index calls (brain/bm25/live.py)

    def slow_merge(*args, **kwargs):
        started.set()
        release.wait(10)
        return original_merge(*args, **kwargs)

    bm25.live.merge_segments = slow_merge
    try:
        for i in range(3):
            do_ingest_note(title=f"Delta {i}", body="autovacuum delta note", wing="eng")
        assert len(search("autovacuum").hits) == 4  # this search starts the merge and does not wait for it
        assert started.wait(10)
        assert live.merging is not None and live.merging.name == "bm25-merge"
        assert len(search("autovacuum").hits) == 4  # answered from base + delta while the merge runs
        release.set()
        live.merging.join(10)
    finally:
        bm25.live.merge_segments = original_merge
        release.set()
    snapshot = bm25.current_index()
    assert len(snapshot.base) == 4 and snapshot.delta_notes == 0 and snapshot.tombstones == 0


@pytest.mark.django_db
def test_a_bulk_load_logged_as_everything_is_picked_up_by_a_full_build(settings):
    settings.BRAIN_EMBEDDER = "off"
    do_ingest_note(title="One", body="autovacuum", wing="eng")
    search("autovacuum")
    builds = bm25.stats.full_builds
    Note.objects.bulk_create(
        [Note(slug=f"bulk-{i}", title="Bulk", body="autovacuum bulk", status="wiki") for i in range(3)]
    )
    bump_brain_version()  # no note ids: "everything may have changed"
    assert len(search("autovacuum").hits) == 4
    assert bm25.stats.full_builds == builds + 1
    assert NoteChange.objects.filter(note_id__isnull=True).count() == 1


@pytest.mark.django_db
def test_another_process_base_on_disk_is_mapped_instead_of_built(settings, tmp_path):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_BM25_DIR = str(tmp_path)
    settings.BRAIN_BM25_SHARE_MIN_NOTES = 0
    for i in range(4):
        do_ingest_note(title=f"Note {i}", body=f"autovacuum {i}", wing="eng")
    first = bm25.current_index()
    assert first.base.path is not None and first.base.path.parent.parent == tmp_path
    builds, loads = bm25.stats.full_builds, bm25.stats.loads
    bm25.reset()  # as a second process on the same machine would start
    do_ingest_note(title="Later", body="autovacuum later", wing="eng")
    second = bm25.current_index()
    assert bm25.stats.full_builds == builds and bm25.stats.loads == loads + 1
    assert second.base.path == first.base.path and second.delta_notes == 1
    assert len(search("autovacuum").hits) == 5


@pytest.mark.django_db
def test_a_process_behind_a_pruned_change_log_compares_its_base_with_the_database_instead_of_building(settings):
    from datetime import timedelta

    from django.utils import timezone

    from brain.actions import do_prune_note_changes

    settings.BRAIN_EMBEDDER = "off"
    do_ingest_note(title="A", body="autovacuum a", wing="eng")
    search("autovacuum")
    do_ingest_note(title="B", body="autovacuum b", wing="eng")
    do_ingest_note(title="C", body="autovacuum c", wing="eng")
    NoteChange.objects.update(created_at=timezone.now() - timedelta(days=2))
    assert do_prune_note_changes() == 2  # the newest row stays
    builds, diffs = bm25.stats.full_builds, bm25.stats.diff_catch_ups
    assert sorted(h.title for h in search("autovacuum").hits) == ["A", "B", "C"]
    assert bm25.stats.full_builds == builds and bm25.stats.diff_catch_ups == diffs + 1


@pytest.mark.django_db
def test_a_process_behind_a_pruned_change_log_builds_again_when_too_much_differs(settings):
    from datetime import timedelta

    from django.utils import timezone

    from brain.actions import do_prune_note_changes

    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_BM25_DIFF_MAX_NOTES = 1
    do_ingest_note(title="A", body="autovacuum a", wing="eng")
    search("autovacuum")
    do_ingest_note(title="B", body="autovacuum b", wing="eng")
    do_ingest_note(title="C", body="autovacuum c", wing="eng")
    NoteChange.objects.update(created_at=timezone.now() - timedelta(days=2))
    do_prune_note_changes()
    builds = bm25.stats.full_builds
    assert sorted(h.title for h in search("autovacuum").hits) == ["A", "B", "C"]
    assert bm25.stats.full_builds == builds + 1


def test_words_are_stemmed_right_when_many_request_threads_tokenise_at_once():
    """A process runs requests on several threads (HYPERGUILD_WEB_CONCURRENCY); a stemmer shared between
    them raised IndexError now and then and returned wrong stems, which the stem cache kept."""
    import snowballstemmer

    rng = random.Random(3)
    words = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 12)))
        + rng.choice(["ing", "ed", "ies", "ation", "ly", "s", "ness", ""])
        for _ in range(12_000)
    ]
    reference = snowballstemmer.stemmer("english")
    expected = [reference.stemWord(word) for word in words]
    stem = bm25._stem.__wrapped__  # the stemmer itself, not the cache in front of it
    problems: list[str] = []

    def work(first: int) -> None:
        try:
            for i in range(first, len(words), 4):
                if stem(words[i]) != expected[i]:
                    problems.append(f"{words[i]} -> {stem(words[i])}, not {expected[i]}")
        except Exception as exc:  # noqa: BLE001 — the failure being looked for
            problems.append(repr(exc))

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the interpreter lock over as often as it can be
    try:
        threads = [threading.Thread(target=work, args=(first,)) for first in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(previous)
    assert problems == []
