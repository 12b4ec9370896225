"""Chunks and embeddings follow the notes: new and changed chunks only, outages caught up later."""

from __future__ import annotations

import pytest
from django.db.models import Count

from brain.actions import do_archive_note, do_edit_note, do_ingest_note
from brain.embedding_sync import EMBED_BATCH, MAX_FAILED_BATCHES, SyncResult, sync_embeddings
from brain.models import Embedding, NoteChunk
from hyperguild.lib.embedders import get_embedder

pytestmark = pytest.mark.django_db


def long_body(sections: int = 6, changed: int | None = None) -> str:
    parts = []
    for i in range(sections):
        text = f"Section {i} explains topic{i} in detail with words about topic{i}."
        if i == changed:
            text += " Edited: a new sentence."
        parts.append(f"## Part {i}\n\n{text}")
    return "\n\n".join(parts)


def assert_one_current_embedding_per_chunk(model: str) -> None:
    chunks = NoteChunk.objects.exclude(note__status="archived")
    for chunk in chunks:
        [embedding] = Embedding.objects.filter(chunk=chunk, model=model)
        assert embedding.content_hash == chunk.content_hash
    duplicates = Embedding.objects.values("chunk", "model").annotate(n=Count("id")).filter(n__gt=1)
    assert not duplicates.exists()


def test_a_sync_embeds_every_chunk_and_a_second_sync_embeds_nothing(ollama_settings, embed_server):
    do_ingest_note(title="Runbook", body=long_body(4), wing="eng")
    do_ingest_note(title="Short", body="one paragraph", wing="eng")
    embedder = get_embedder()
    first = sync_embeddings(embedder)
    assert (first.added, first.deleted, first.errors, first.pending) == (5, 0, [], 0)
    assert embed_server.texts_embedded == 5
    assert_one_current_embedding_per_chunk(embedder.key)
    embed_server.reset_counts()
    second = sync_embeddings(embedder)
    assert (second.added, second.deleted, second.rechunked, second.errors) == (0, 0, 0, [])
    assert embed_server.requests == []


def test_chunks_follow_headings_and_carry_their_heading_path(ollama_settings):
    note = do_ingest_note(title="Guide", body="Intro.\n\n# Setup\n\nInstall.\n\n## Linux\n\napt-get.", wing="eng")
    sync_embeddings(get_embedder())
    chunks = list(NoteChunk.objects.filter(note=note).values_list("ordinal", "heading_path", "text"))
    assert chunks == [(0, "", "Intro."), (1, "Setup", "Install."), (2, "Setup > Linux", "apt-get.")]


def test_editing_one_section_of_a_long_note_re_embeds_only_that_chunk(ollama_settings, embed_server):
    note = do_ingest_note(title="Handbook", body=long_body(8), wing="eng")
    embedder = get_embedder()
    sync_embeddings(embedder)
    before = dict(Embedding.objects.values_list("chunk__ordinal", "id"))
    embed_server.reset_counts()

    do_edit_note(note, body=long_body(8, changed=5))
    result = sync_embeddings(embedder)

    assert embed_server.texts_embedded == 1
    [request] = embed_server.requests
    assert "Edited: a new sentence." in request["body"]["input"][0]
    assert (result.added, result.deleted) == (1, 0)
    after = dict(Embedding.objects.values_list("chunk__ordinal", "id"))
    assert after == before  # rows kept (updated in place), none duplicated
    assert_one_current_embedding_per_chunk(embedder.key)


def test_a_section_inserted_before_others_embeds_only_the_new_text(ollama_settings, embed_server):
    note = do_ingest_note(title="Handbook", body=long_body(4), wing="eng")
    embedder = get_embedder()
    sync_embeddings(embedder)
    embed_server.reset_counts()
    do_edit_note(note, body="## Preface\n\nA brand new preface.\n\n" + long_body(4))
    result = sync_embeddings(embedder)
    # Every old section moved one ordinal down; their vectors are reused by content hash.
    assert embed_server.texts_embedded == 1
    assert result.added == 5
    assert_one_current_embedding_per_chunk(embedder.key)


def test_archived_notes_and_removed_sections_lose_their_embeddings(ollama_settings):
    gone = do_ingest_note(title="Old", body=long_body(3), wing="eng")
    shrinking = do_ingest_note(title="Shrinking", body=long_body(5), wing="eng")
    embedder = get_embedder()
    sync_embeddings(embedder)
    assert Embedding.objects.count() == 8

    do_archive_note(gone, reason="obsolete")
    do_edit_note(shrinking, body=long_body(2))
    result = sync_embeddings(embedder)

    assert result.deleted == 3 + 3
    assert not NoteChunk.objects.filter(note=gone).exists()
    assert NoteChunk.objects.filter(note=shrinking).count() == 2
    assert Embedding.objects.count() == 2
    assert_one_current_embedding_per_chunk(embedder.key)


def test_an_embedder_down_during_a_sync_reports_errors_and_the_next_sync_finishes(ollama_settings, embed_server):
    # Enough chunks for several batches; the service fails from its second request on.
    for i in range(3):
        do_ingest_note(title=f"Big {i}", body=long_body(EMBED_BATCH), wing="eng")
    embedder = get_embedder()
    embed_server.fail_from_request = 2
    failed = sync_embeddings(embedder)
    assert failed.added == EMBED_BATCH
    assert len(failed.errors) == 2 and all("HTTP 500" in error for error in failed.errors)
    assert failed.pending == 3 * EMBED_BATCH - EMBED_BATCH

    embed_server.fail_from_request = None
    embed_server.reset_counts()
    finished = sync_embeddings(embedder)
    assert (finished.added, finished.errors, finished.pending) == (2 * EMBED_BATCH, [], 0)
    assert embed_server.texts_embedded == 2 * EMBED_BATCH  # nothing embedded twice
    assert Embedding.objects.count() == 3 * EMBED_BATCH
    assert_one_current_embedding_per_chunk(embedder.key)


def test_a_sync_of_one_note_leaves_the_others_alone(ollama_settings, embed_server):
    first = do_ingest_note(title="First", body="alpha", wing="eng")
    do_ingest_note(title="Second", body="beta", wing="eng")
    result = sync_embeddings(get_embedder(), note_ids=[first.id])
    assert result.added == 1
    assert list(Embedding.objects.values_list("chunk__note_id", flat=True)) == [first.id]


def test_a_sync_stops_calling_a_service_that_keeps_failing(ollama_settings, embed_server):
    for i in range(MAX_FAILED_BATCHES + 1):
        do_ingest_note(title=f"Big {i}", body=long_body(EMBED_BATCH), wing="eng")
    embed_server.mode = "error"
    result: SyncResult = sync_embeddings(get_embedder())
    assert result.added == 0 and result.pending == (MAX_FAILED_BATCHES + 1) * EMBED_BATCH
    assert len(result.errors) == MAX_FAILED_BATCHES + 1 and "next sync resumes" in result.errors[-1]
    assert not Embedding.objects.exists()
