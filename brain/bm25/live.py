"""The process's live index: the base, the notes changed since, background merges, and the snapshot queries use."""

from __future__ import annotations

import logging
import threading
import time
from array import array
from collections.abc import Iterator

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import TextField, Value
from django.db.models.functions import MD5, Concat

from brain.bm25.counters import stats
from brain.bm25.merging import merge_segments
from brain.bm25.segments import DocTerms, Segment, doc_terms, segment_from_docs, segment_from_rows
from brain.bm25.snapshot import Snapshot
from brain.bm25.storage import file_lock, forget_old_bases, load_segment, newest_on_disk, save_segment, shared_dir
from brain.models import BrainVersion, Note, NoteChange
from hyperguild.lib.processes import give_back_freed_memory
from observability.metrics import BM25_REFRESH

logger = logging.getLogger(__name__)

FETCH_BATCH = 2000


class CorpusGap(Exception):
    """The change log does not cover the versions since the snapshot: pruned (`bulk` False), or a bulk change
    logged as "everything" (`bulk` True)."""

    def __init__(self, version: int, *, bulk: bool = False) -> None:
        super().__init__(version)
        self.bulk = bulk


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
        except CorpusGap as gap:
            # A pruned log (a service down for longer than the log is kept): the base is compared with the
            # database instead, which re-tokenises only what differs. A bulk change is built from scratch.
            if gap.bulk or not self._catch_up_by_diff():
                self._start_over(corpus_id, from_scratch=True)
            self._apply_changes(version)

    def _apply_changes(self, target: int) -> None:
        rows = list(
            NoteChange.objects.filter(version__gt=self.version).order_by("version").values_list("version", "note_id")
        )
        expected = self.version + 1
        latest: dict[int, int] = {}
        for version, note_id in rows:
            if note_id is None:  # a bulk load logged as "everything"
                raise CorpusGap(version, bulk=True)
            if version > expected:  # pruned
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
            for row in (
                Note.objects.searchable()
                .filter(id__in=ids[start : start + FETCH_BATCH])
                .values_list("id", "title", "body", "status", "wing", "hall")
            ):
                docs[row[0]] = doc_terms(*row)
        for note_id, version in latest.items():
            self.changed[note_id] = version
            self.delta_docs.pop(note_id, None)
            if note_id in docs:
                self.delta_docs[note_id] = docs[note_id]
        self.version = expected - 1
        self._publish()

    def _catch_up_by_diff(self) -> bool:
        """Bring the base up to the database without the change log: compare each note's text fingerprint,
        status, wing and hall with the base's, and take the notes that differ (or appeared, or went) as changed.

        PostgreSQL hashes the texts (`md5`), so only ids and fingerprints cross the wire and only the notes
        that differ are tokenised. False (nothing changed here) when more than BRAIN_BM25_DIFF_MAX_NOTES
        differ: then a full build is cheaper than a delta that large.
        """
        base = self.base
        if base is None:
            return False
        started = time.perf_counter()
        # Read before the rows, as in _full_build: a write landing in between is applied again on top.
        version = BrainVersion.current()
        ids, fingerprints, codes = array("q"), array("Q"), array("i")
        code_of: dict[str, int] = {}
        fingerprint = MD5(Concat("title", Value("\n"), "body", output_field=TextField()))
        rows = (
            Note.objects.searchable()
            .annotate(fingerprint=fingerprint)
            .values_list("id", "fingerprint", "status", "wing", "hall")
            .iterator(chunk_size=FETCH_BATCH)
        )
        for note_id, digest, status, wing, hall in rows:
            ids.append(note_id)
            fingerprints.append(int(digest[:16], 16))
            for label in (status, wing, hall):
                code = code_of.get(label)
                if code is None:
                    code = code_of[label] = base.code(label)
                codes.append(code)
        note_ids = np.frombuffer(ids, dtype=np.int64) if ids else np.zeros(0, np.int64)
        found = np.frombuffer(fingerprints, dtype=np.uint64) if ids else np.zeros(0, np.uint64)
        labels = (np.frombuffer(codes, dtype=np.int32) if ids else np.zeros(0, np.int32)).reshape(-1, 3)
        differs = np.ones(len(note_ids), dtype=bool)
        in_base = np.zeros(len(base), dtype=bool)
        if len(base) and len(note_ids):
            at = np.minimum(np.searchsorted(base.note_ids, note_ids), len(base) - 1)
            same_id = base.note_ids[at] == note_ids
            in_base[at[same_id]] = True
            differs = ~same_id | (base.fingerprints[at] != found)
            for column, codes_name in enumerate(("status_codes", "wing_codes", "hall_codes")):
                differs |= getattr(base, codes_name)[at] != labels[:, column]
        changed = note_ids[differs].tolist()
        removed = base.note_ids[~in_base].tolist()
        if len(changed) + len(removed) > settings.BRAIN_BM25_DIFF_MAX_NOTES:
            logger.info(
                "BM25 base %d behind the database by %d notes: built again", base.version, len(changed) + len(removed)
            )
            return False
        docs: dict[int, DocTerms] = {}
        for start in range(0, len(changed), FETCH_BATCH):
            for row in (
                Note.objects.searchable()
                .filter(id__in=changed[start : start + FETCH_BATCH])
                .values_list("id", "title", "body", "status", "wing", "hall")
            ):
                docs[row[0]] = doc_terms(*row)
        self.changed = {note_id: version for note_id in changed + removed}
        self.delta_docs = docs
        self.middle, self.middle_versions = None, {}
        self.version = version
        stats.diff_catch_ups += 1
        logger.info(
            "BM25 base %d compared with the database at version %d: %d notes differ (%.2f s)",
            base.version,
            version,
            len(self.changed),
            time.perf_counter() - started,
        )
        self._publish()
        return True

    def _start_over(self, corpus_id: str, *, from_scratch: bool = False) -> None:
        """A base for `corpus_id`: the newest one shared on disk if it is usable, else a full build."""
        self.corpus_id = corpus_id
        self.changed, self.delta_docs = {}, {}
        self.middle, self.middle_versions = None, {}
        directory = shared_dir(corpus_id)
        # A base on disk is mapped without the lock (bases are written by renaming a finished folder): a process
        # starting while another one merges (minutes at 1,000,000 notes) answers from the base it finds at once.
        base = None if from_scratch else newest_on_disk(directory, BrainVersion.current())
        if base is not None:
            self.base = base
            self.version = base.version
            self._publish()
            return
        with file_lock(directory):
            base = None if from_scratch else newest_on_disk(directory, BrainVersion.current())
            if base is None:
                base = self._full_build()
                if directory is not None and len(base) >= settings.BRAIN_BM25_SHARE_MIN_NOTES:
                    base = load_segment(save_segment(base, directory, corpus_id))
                    forget_old_bases(directory, keep=base.path)
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

        def rows() -> Iterator[tuple[int, str, str, str, str, str]]:
            for start in range(0, len(ids), FETCH_BATCH):
                yield from (
                    Note.objects.searchable()
                    .filter(id__in=ids[start : start + FETCH_BATCH])
                    .order_by("id")
                    .values_list("id", "title", "body", "status", "wing", "hall")
                )

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
        assert base is not None and self.corpus_id is not None  # _start_over set both before any publish
        fresh = [d for i, d in self.delta_docs.items() if self.middle_versions.get(i) != self.changed[i]]
        if len(fresh) > settings.BRAIN_BM25_FRESH_NOTES:
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
        self.snapshot = Snapshot(
            version=self.version,
            corpus_id=self.corpus_id,
            base=base,
            dead=dead,
            delta=delta,
            middle=self.middle,
            middle_dead=middle_dead,
        )
        stats.refreshes += 1
        if len(self.changed) >= settings.BRAIN_BM25_MERGE_NOTES and self.merging is None:
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
        with file_lock(directory):
            # Another process on this machine may have merged already: use its base if it is not ahead of us.
            new_base = newest_on_disk(directory, snapshot.version)
            if new_base is None or new_base.version <= snapshot.base.version:
                delta = segment_from_docs(changed_docs, snapshot.version)
                new_base = merge_segments(snapshot.base, snapshot.alive, delta, snapshot.version)
                if directory is not None and len(new_base) >= settings.BRAIN_BM25_SHARE_MIN_NOTES:
                    new_base = load_segment(save_segment(new_base, directory, snapshot.corpus_id))
                    forget_old_bases(directory, keep=new_base.path)
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


_live = LiveIndex()
_local_writes = 0  # bumped by this process's writes: its next search checks the version at once


def note_local_write() -> None:
    """Called by `brain.indexing.bump_brain_version()` (and again on commit): read-your-writes for this process."""
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
        and now - live.checked_at < settings.BRAIN_BM25_CHECK_SECONDS
    ):
        return snapshot
    version, corpus_id = BrainVersion.current_with_corpus()
    if snapshot is None or snapshot.corpus_id != corpus_id or snapshot.version < version:
        with live.lock, BM25_REFRESH.time():
            live.catch_up(version, corpus_id)
            snapshot = live.snapshot
    assert snapshot is not None  # catch_up publishes one
    live.checked_at, live.local_writes_seen = now, writes
    return snapshot


def warm_in_background() -> threading.Thread | None:
    """In a starting web process (`hyperguild.contributions.register_web_start`): map the base (or build it) and
    apply the notes changed since, on a thread, so that the process's first query finds its index ready instead
    of making it (the last step of a restart; bench/RESULTS.md, "Restart"). Queries stay exactly as fresh as
    without it: the warm-up leaves `checked_at` alone, so the first query still reads the corpus version
    (`current_index`); one that arrives during the warm-up waits for the lock and then applies whatever is newer.
    Off when the setting BRAIN_BM25_WARM_AT_START is False (fixed on; a test turns it off)."""
    if not settings.BRAIN_BM25_WARM_AT_START:
        return None

    def warm() -> None:
        try:
            version, corpus_id = BrainVersion.current_with_corpus()
            live = _live
            with live.lock, BM25_REFRESH.time():
                live.catch_up(version, corpus_id)
        except Exception:  # noqa: BLE001 - the first query makes the index instead, and reports what fails
            logger.warning("BM25 warm-up at start failed; the first query makes the index", exc_info=True)
        finally:
            connection.close()  # this thread's own connection (back to the pool in a web process)

    thread = threading.Thread(target=warm, name="bm25-warm", daemon=True)
    thread.start()
    return thread


def reset() -> None:
    """Forget the process's index (tests, and the eval command between datasets)."""
    global _live
    with _live.lock:
        _live = LiveIndex()


def live_index() -> LiveIndex:
    return _live
