"""The base segment on disk: a restarted service maps it instead of building, and never uses a stale one.

A restart is a new `LiveIndex` in the process (`bm25.reset()`), as a new web process starts with
none; what it may reuse is only what is under BRAIN_BM25_DIR. The builds are counted.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from brain import bm25
from brain.actions import do_archive_note, do_edit_note, do_ingest_note
from brain.bm25.storage import SEGMENT_FORMAT
from brain.indexing import bump_brain_version
from brain.models import BrainVersion, Note
from brain.search import search

pytestmark = pytest.mark.django_db


@pytest.fixture
def on_disk(settings, tmp_path):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_BM25_DIR = str(tmp_path / "bm25")
    settings.BRAIN_BM25_SHARE_MIN_NOTES = 0  # every base is written to disk, however small
    settings.BRAIN_BM25_CHECK_SECONDS = 60
    return tmp_path / "bm25"


def five_notes() -> list[Note]:
    return [do_ingest_note(title=f"Vacuum {i}", body=f"autovacuum freeze horizon {i}", wing="eng") for i in range(5)]


def hits(query: str) -> list[tuple[str, float]]:
    return [(hit.title, hit.score) for hit in search(query).hits]


def test_a_restarted_service_maps_the_base_from_disk_and_builds_nothing(on_disk):
    five_notes()
    before_restart = hits("autovacuum horizon")
    first = bm25.current_index()
    assert first.base.path is not None and first.base.path.is_relative_to(on_disk)
    builds, loads = bm25.stats.full_builds, bm25.stats.loads
    bm25.reset()  # the service restarts: no index in memory
    assert hits("autovacuum horizon") == before_restart
    assert bm25.stats.full_builds == builds  # not built again
    assert bm25.stats.loads == loads + 1  # mapped from disk
    assert bm25.current_index().base.path == first.base.path


def test_notes_changed_while_the_service_was_down_are_applied_on_top_of_the_base_from_disk(on_disk):
    notes = five_notes()
    search("autovacuum")
    builds = bm25.stats.full_builds
    bm25.reset()  # down; meanwhile another process (or the worker) writes
    do_edit_note(notes[0], body="wraparound emergency")
    do_archive_note(notes[1])
    do_ingest_note(title="Checkpoint", body="autovacuum checkpoint spread", wing="eng")
    bm25.reset()  # and it starts again
    titles = {title for title, _ in hits("autovacuum")}
    assert titles == {"Vacuum 2", "Vacuum 3", "Vacuum 4", "Checkpoint"}  # the base's stale copies are masked
    assert [title for title, _ in hits("wraparound")] == ["Vacuum 0"]
    assert bm25.stats.full_builds == builds  # the logged changes were applied, nothing built
    snapshot = bm25.current_index()
    assert snapshot.version == BrainVersion.current() and snapshot.tombstones == 2 and snapshot.delta_notes == 2


def test_a_base_of_another_corpus_is_never_used(on_disk):
    five_notes()
    search("autovacuum")
    old_corpus = bm25.current_index().corpus_id
    # A new database (or an emptied one) has a new corpus id, even where the versions happen to match.
    Note.objects.all().delete()
    BrainVersion.objects.all().delete()
    do_ingest_note(title="Other brain", body="autovacuum elsewhere", wing="eng")
    builds = bm25.stats.full_builds
    bm25.reset()
    assert [title for title, _ in hits("autovacuum")] == ["Other brain"]
    assert bm25.stats.full_builds == builds + 1
    assert bm25.current_index().corpus_id != old_corpus


def test_a_bulk_change_while_down_builds_a_new_base_instead_of_trusting_the_old_one(on_disk):
    five_notes()
    search("autovacuum")
    builds = bm25.stats.full_builds
    bm25.reset()
    Note.objects.filter(title="Vacuum 0").update(body="bulk rewritten")  # a bulk load: no per-note log
    bump_brain_version()  # "everything may have changed"
    assert "Vacuum 0" not in {title for title, _ in hits("autovacuum")}
    assert bm25.stats.full_builds == builds + 1


def test_a_base_newer_than_the_database_is_not_used(on_disk):
    five_notes()
    search("autovacuum")
    builds = bm25.stats.full_builds
    bm25.reset()
    BrainVersion.objects.update(version=1)  # the database went back (a restore) behind the base on disk
    assert len(hits("autovacuum")) == 5
    assert bm25.stats.full_builds == builds + 1


def test_a_base_written_in_another_format_is_built_again_not_misread(on_disk):
    five_notes()
    path = bm25.current_index().base.path
    meta = json.loads((path / "meta.json").read_text())
    (path / "meta.json").write_text(json.dumps({**meta, "format": SEGMENT_FORMAT - 1}))
    builds, loads = bm25.stats.full_builds, bm25.stats.loads
    bm25.reset()
    assert len(hits("autovacuum")) == 5
    assert bm25.stats.full_builds == builds + 1
    assert bm25.current_index().base.path == path  # rewritten in this format, then mapped
    assert json.loads((path / "meta.json").read_text())["format"] == SEGMENT_FORMAT
    assert bm25.stats.loads == loads + 1


def test_a_restart_behind_a_pruned_change_log_applies_only_what_differs_from_the_base_on_disk(on_disk, settings):
    from datetime import timedelta

    from django.utils import timezone

    from brain.actions import do_promote_note, do_prune_note_changes, do_write_raw_note
    from brain.models import NoteChange

    notes = five_notes()
    unicode_note = do_ingest_note(title="Café 日本", body="autovacuum naïve résumé 東京", wing="eng")
    raw = do_write_raw_note(title="Raw vacuum", body="autovacuum raw draft")
    search("autovacuum")
    builds = bm25.stats.full_builds
    bm25.reset()  # down for days, while others write
    do_edit_note(notes[0], body="wraparound emergency")
    do_archive_note(notes[1])
    do_promote_note(raw, reviewer=None, wing="ops")  # the same text, another status and wing
    do_ingest_note(title="Checkpoint", body="autovacuum checkpoint spread", wing="eng")
    NoteChange.objects.update(created_at=timezone.now() - timedelta(days=2))
    do_prune_note_changes()  # the log no longer reaches back to the base on disk
    diffs, tokenised = bm25.stats.diff_catch_ups, bm25.stats.tokenised
    bm25.reset()
    snapshot = bm25.current_index()
    assert bm25.stats.full_builds == builds and bm25.stats.diff_catch_ups == diffs + 1
    assert bm25.stats.tokenised - tokenised == 3  # the edited, the promoted and the new note; nothing else
    assert snapshot.tombstones == 3 and snapshot.delta_notes == 3  # the unicode note's fingerprint matched
    rows = list(Note.objects.searchable().order_by("id").values_list("id", "title", "body", "status", "wing", "hall"))
    full = bm25.build_index(rows, version=snapshot.version)
    for query in ("autovacuum", "wraparound", "café 東京", "raw draft"):
        tokens = bm25.tokenize(query)
        for status in ("wiki", "raw", None):
            assert snapshot.rank(tokens, limit=20, status=status) == full.rank(tokens, limit=20, status=status)
    assert unicode_note.id in {note_id for note_id, _ in snapshot.rank(bm25.tokenize("東京"), limit=5)}


@pytest.mark.django_db(transaction=True)  # the starting thread has its own connection: the notes must be committed
def test_a_restarted_process_maps_the_base_while_another_process_holds_the_lock_to_merge(on_disk):
    import threading

    from brain.bm25.storage import file_lock, shared_dir

    five_notes()
    expected = hits("autovacuum horizon")
    corpus_id = bm25.current_index().corpus_id
    builds = bm25.stats.full_builds
    bm25.reset()
    answered: list = []
    # Another process merging holds the machine's BM25 lock for as long as the merge takes.
    with file_lock(shared_dir(corpus_id)):

        def start() -> None:
            try:
                answered.append(hits("autovacuum horizon"))
            finally:
                connection.close()

        starting = threading.Thread(target=start)
        starting.start()
        starting.join(60)
        assert not starting.is_alive(), "the restarted process waited for the other process's lock"
    assert answered == [expected] and bm25.stats.full_builds == builds


@pytest.mark.django_db(transaction=True)  # the warm-up thread has its own connection: the notes must be committed
def test_a_starting_web_process_maps_the_base_before_its_first_query_and_the_query_still_sees_later_notes(on_disk):
    notes = five_notes()
    search("autovacuum")  # the base on disk
    builds, loads = bm25.stats.full_builds, bm25.stats.loads
    bm25.reset()  # a new web process
    do_edit_note(notes[0], body="wraparound emergency")  # changed while it was down: applied on top of the base
    warming = bm25.live.warm_in_background()
    assert warming is not None
    warming.join(60)
    assert not warming.is_alive()
    warmed = bm25.live_index().snapshot
    assert warmed is not None and warmed.version == BrainVersion.current()  # ready before any query
    assert bm25.stats.full_builds == builds and bm25.stats.loads == loads + 1  # mapped from disk, not built
    assert bm25.live_index().checked_at == 0.0  # the first query still reads the corpus version itself
    later = do_ingest_note(title="Checkpoint", body="autovacuum checkpoint spread", wing="eng")
    titles = {title for title, _ in hits("autovacuum")}  # within BRAIN_BM25_CHECK_SECONDS (60 s here) of the warm-up
    assert later.title in titles and "Vacuum 0" not in titles
    assert bm25.stats.full_builds == builds


def test_the_warm_up_at_start_can_be_switched_off(on_disk, settings):
    settings.BRAIN_BM25_WARM_AT_START = False
    bm25.reset()
    assert bm25.live.warm_in_background() is None
    assert bm25.live_index().snapshot is None


def test_every_web_process_warms_the_brain_index_as_it_starts():
    from hyperguild.contributions import web_start_hooks

    assert bm25.live.warm_in_background in web_start_hooks()
