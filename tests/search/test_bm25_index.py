"""The in-memory BM25 index: rank-bm25's scores, built once, rebuilt when the corpus moves."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from brain import bm25
from brain.actions import do_edit_note, do_ingest_note, do_write_raw_note
from brain.models import Note
from brain.search import SearchInputError, search

WORDS = (
    "postgres vacuum index query planner latency cache worker queue retry timeout deploy rollback schema "
    "migration token secret review search vector embedding chunk heading session note wiki raw archive "
    "python django uvicorn thread process signal memory disk network socket"
).split()


def sample_corpus(n: int = 300, seed: int = 7) -> list[tuple[int, str, str, str, str, str]]:
    """Zipf-like word use: a few common words (negative idf, floored) and a long tail."""
    rng = random.Random(seed)
    vocabulary = WORDS + [f"term{i}" for i in range(2000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    rows = []
    for i in range(n):
        title = " ".join(rng.choices(vocabulary, weights, k=rng.randint(1, 4)))
        body = " ".join(rng.choices(vocabulary, weights, k=rng.randint(5, 80)))
        rows.append((i + 1, title, body, "wiki", "eng", "ops"))
    return rows


def test_scores_and_top_results_agree_with_rank_bm25_on_a_sample_corpus():
    rows = sample_corpus()
    index = bm25.build_index(rows, version=1)
    reference = BM25Okapi([bm25.tokenize(bm25.note_text(t, b)) for _, t, b, *_ in rows], k1=bm25.K1, b=bm25.B)
    rng = random.Random(3)
    for _ in range(25):
        query = bm25.tokenize(" ".join(rng.choices(WORDS, k=rng.randint(1, 4))))
        expected = reference.get_scores(query)
        ours = index.rank(query, limit=len(rows))
        by_id = dict(ours)
        for note_id, *_ in rows:
            assert by_id.get(note_id, 0.0) == pytest.approx(expected[note_id - 1], abs=1e-9)
        top_ours = [note_id for note_id, _ in ours[:10]]
        top_reference = [int(i) + 1 for i in np.argsort(-expected, kind="stable")[:10]]
        assert [round(by_id[i], 9) for i in top_ours] == [round(expected[i - 1], 9) for i in top_reference]


def test_the_tokenizer_handles_english_stems_accents_and_cjk():
    assert bm25.tokenize("The runners were Running") == ["runner", "run"]
    assert bm25.tokenize("Ünïcode CAFÉ") == ["ünïcode", "café"]
    assert bm25.tokenize("東京タワー") == ["東", "京", "タ", "ワ", "ー"]
    assert bm25.tokenize("ﬁle") == ["file"]  # NFKC folds the ligature


@pytest.mark.django_db
def test_the_index_is_built_once_and_a_write_only_tokenises_the_new_note():
    do_ingest_note(title="Vacuum tuning", body="Autovacuum thresholds for big tables.", wing="eng", hall="db")
    builds, tokenised = bm25.stats.full_builds, bm25.stats.tokenised
    first = search("autovacuum")
    second = search("thresholds")
    assert bm25.stats.full_builds == builds + 1
    assert [h.slug for h in first.hits] == [h.slug for h in second.hits]
    do_ingest_note(title="Replica lag", body="Autovacuum on the replica.", wing="eng", hall="db")
    third = search("autovacuum")
    assert bm25.stats.full_builds == builds + 1  # no whole-index rebuild after a write
    assert bm25.stats.tokenised == tokenised + 2  # the first note at the build, the new one after the write
    assert len(third.hits) == 2


@pytest.mark.django_db
def test_hits_carry_the_note_fields_score_excerpt_and_bm25_rank(settings):
    settings.BRAIN_EMBEDDER = "off"
    body = "Intro paragraph about nothing much.\n\nThe deploy runbook: roll back with the previous image tag."
    note = do_ingest_note(title="Deploys", body=body, wing="eng", hall="ops")
    response = search("rollback previous image")
    [hit] = response.hits
    assert (hit.note_id, hit.slug, hit.title, hit.wing, hall := hit.hall, hit.status) == (
        note.id,
        note.slug,
        "Deploys",
        "eng",
        "ops",
        "wiki",
    )
    assert hall == "ops" and hit.path == note.path
    assert hit.score > 0 and hit.rankers == {"bm25": 1}
    assert "previous image tag" in hit.excerpt and "Intro paragraph" not in hit.excerpt
    assert response.degraded is False and response.reason is None


@pytest.mark.django_db
def test_wing_hall_and_status_filters(settings):
    settings.BRAIN_EMBEDDER = "off"
    do_ingest_note(title="Kafka retention", body="retention of topics", wing="eng", hall="streams")
    do_ingest_note(title="Retention policy", body="retention of customer data", wing="legal", hall="gdpr")
    raw = do_write_raw_note(title="Retention idea", body="retention of logs")
    assert {h.wing for h in search("retention").hits} == {"eng", "legal"}
    assert [h.title for h in search("retention", wing="legal").hits] == ["Retention policy"]
    assert [h.title for h in search("retention", hall="streams").hits] == ["Kafka retention"]
    assert [h.slug for h in search("retention", status="raw").hits] == [raw.slug]
    assert len(search("retention", status=None).hits) == 3
    assert len(search("retention", status="any").hits) == 3


@pytest.mark.django_db
def test_an_edited_note_is_found_by_its_new_words(settings):
    settings.BRAIN_EMBEDDER = "off"
    note = do_ingest_note(title="Cache", body="redis eviction", wing="eng")
    assert search("memcached").hits == []
    do_edit_note(note, body="memcached eviction")
    assert [h.slug for h in search("memcached").hits] == [note.slug]


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_is_refused(query):
    with pytest.raises(SearchInputError, match="empty"):
        search(query)
    assert Note.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("limit", [0, 51])
def test_a_limit_outside_1_to_50_is_refused(limit):
    with pytest.raises(SearchInputError, match="between 1 and 50"):
        search("anything", limit=limit)


@pytest.mark.django_db
def test_a_rebuild_after_a_write_tokenises_only_the_changed_note():
    bm25.reset()
    notes = [do_ingest_note(title=f"Note {i}", body=f"vacuum {i} planner", wing="eng") for i in range(6)]
    before = bm25.stats.tokenised
    search("vacuum")
    first_pass = bm25.stats.tokenised
    assert first_pass == before + 6

    do_edit_note(notes[2], body="the planner chose a bitmap scan")
    hits = search("bitmap").hits

    assert [hit.slug for hit in hits] == [notes[2].slug]
    assert bm25.stats.tokenised == first_pass + 1


def test_terms_no_note_uses_any_more_do_not_change_the_scores():
    rows = sample_corpus(120)
    obsolete = (9999, "obsolete words", "zzzonly qqqonly", "wiki", "eng", "ops")
    with_obsolete = bm25.build_index([obsolete] + rows, 1)
    # The obsolete note tombstoned: its terms stay in the base segment's vocabulary with no live document.
    tombstoned = bm25.Snapshot(
        version=2,
        corpus_id="",
        base=with_obsolete.base,
        dead=with_obsolete.base.positions([9999]),
        delta=bm25.segment_from_docs([], 2),
    )
    fresh = bm25.build_index(rows, 3)
    for text in ("postgres vacuum term7", "zzzonly", "the a postgres"):
        query = bm25.tokenize(text)
        tombstoned_hits, fresh_hits = tombstoned.rank(query, limit=20), fresh.rank(query, limit=20)
        assert [note_id for note_id, _ in tombstoned_hits] == [note_id for note_id, _ in fresh_hits]
        assert [score for _, score in tombstoned_hits] == pytest.approx([score for _, score in fresh_hits])
    assert tombstoned.idf_floor() == pytest.approx(fresh.idf_floor())
