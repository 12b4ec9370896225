"""Embedding work in bounded slices on its own django-q2 queue (issue 47): a slice stops after its time, queues the
next one (never two waiting), and the similar-notes ranking after a write is bounded the same way."""

from __future__ import annotations

import pytest
from django.conf import settings
from django_q.models import OrmQ

from brain.actions import do_ingest_note, do_write_raw_note
from brain.models import Embedding, NoteChunk
from brain.tasks import EMBED_TASK, refresh_similar_notes, resume_embedding_backlog, sync_embeddings
from hyperguild.models import WorkerHeartbeat

pytestmark = pytest.mark.django_db


def waiting(func: str) -> list[OrmQ]:
    return [message for message in OrmQ.objects.filter(key=settings.EMBED_QUEUE) if message.func() == func]


def test_a_slice_embeds_one_batch_at_least_then_queues_the_next_once(ollama_settings):
    for number in range(40):  # 40 chunks: two batches of 32
        do_ingest_note(title=f"Note {number}", body=f"Topic {number}.", wing="sci")
    OrmQ.objects.all().delete()  # what the writes queued: this test drives the slices by hand

    first = sync_embeddings(max_seconds=0)  # the slice is spent after its first batch

    assert (first["added"], first["pending"], first["next_slice_queued"]) == (32, 8, True)
    assert len(waiting(EMBED_TASK)) == 1
    assert WorkerHeartbeat.objects.filter(name="embed").exists()  # /health's "last slice"
    resume_embedding_backlog()  # serve's start, with a slice already waiting: not a second one
    assert len(waiting(EMBED_TASK)) == 1

    second = sync_embeddings()
    assert (second["added"], second["pending"]) == (8, 0) and "next_slice_queued" not in second
    assert Embedding.objects.count() == NoteChunk.objects.count() == 40


def test_a_failing_embedder_queues_no_next_slice(ollama_settings, embed_server):
    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    OrmQ.objects.all().delete()
    embed_server.mode = "error"
    result = sync_embeddings()
    assert result["pending"] == 1 and result["errors"] and "next_slice_queued" not in result
    assert waiting(EMBED_TASK) == []  # the schedule tries again later, not a loop of failing slices


def test_the_similar_notes_ranking_past_its_time_queues_the_rest(ollama_settings):
    raw = [
        do_write_raw_note(title=f"Event loop idea {n}", body="Pin the event loop policy in tests.") for n in range(3)
    ]
    OrmQ.objects.all().delete()
    result = refresh_similar_notes(*[note.pk for note in raw], max_seconds=0)
    assert (result["ranked"], result["queued"]) == (0, 3)
    [rest] = waiting("brain.tasks.refresh_similar_notes")
    assert rest.args() == tuple(note.pk for note in raw)
