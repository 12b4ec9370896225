"""The embedding backlog is visible, and its figures move as a large import is embedded.

A brain folder of IMPORTED notes goes in through `brain_import`; the fake
embedding server (Ollama format, 127.0.0.1) embeds them during one sync. At
every batch the test reads the backlog the way /health, the home page and
`brain_embed --status` do, and search answers say `"partial": true` until
the backlog is empty.
"""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from brain import backlog
from brain.embedding_sync import EMBED_BATCH, sync_embeddings
from brain.models import NoteChunk
from brain.search import search
from hyperguild.lib.embedders import get_embedder

IMPORTED = 100

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported_brain(tmp_path, ollama_settings):
    ollama_settings.BRAIN_VECTOR_FLOOR = -1.0
    folder = tmp_path / "brain" / "wiki" / "concepts" / "imported"
    folder.mkdir(parents=True)
    for i in range(IMPORTED):
        (folder / f"note-{i}.md").write_text(
            f"# Imported note {i}\n\nThe deploy runbook step {i}: check the proxy and the queue {i % 7}.\n"
        )
    call_command("brain_import", str(tmp_path / "brain"), stdout=io.StringIO(), stderr=io.StringIO())
    backlog.forget()
    return ollama_settings


def health(client: Client) -> dict:
    return client.get("/health").json()["embeddings"]


def test_backlog_figures_move_while_a_large_import_is_embedded(imported_brain, embed_server):
    key = get_embedder().key
    client = Client()
    client.force_login(get_user_model().objects.create_user("reader", password="pw-reader-123"))

    before = health(client)["active"]
    assert before["model"] == key
    assert (before["embedded_chunks"], before["notes_waiting"], before["complete"]) == (0, IMPORTED, False)
    assert search("deploy runbook proxy").partial is True
    assert "notes waiting to be chunked" in client.get("/").content.decode()
    status_before = io.StringIO()
    call_command("brain_embed", "--status", stdout=status_before)
    assert f"{key} (active): 0 chunks embedded, 0 pending, {IMPORTED} notes waiting" in status_before.getvalue()
    assert "search answers are partial" in status_before.getvalue()

    seen: list[dict] = []

    def progress(done: int, total: int) -> None:
        backlog.forget()
        seen.append({"done": done, **backlog.model_status(get_embedder())})

    result = sync_embeddings(get_embedder(), progress=progress)
    assert result.errors == [] and result.added == IMPORTED

    # After re-chunking every note is waiting for its vectors; each batch moves EMBED_BATCH of them.
    assert seen[0]["pending_chunks"] == IMPORTED and seen[0]["notes_waiting"] == 0
    pending = [snapshot["pending_chunks"] for snapshot in seen]
    embedded = [snapshot["embedded_chunks"] for snapshot in seen]
    assert pending == sorted(pending, reverse=True) and len(set(pending)) == len(pending)
    assert all(a + b == IMPORTED for a, b in zip(pending, embedded, strict=True))
    assert pending[1] == IMPORTED - EMBED_BATCH and pending[-1] == 0
    # Once two batches are in, the rate is known and the time left is estimated from it.
    mid = seen[2]
    assert mid["chunks_per_second"] > 0 and mid["eta_seconds"] is not None
    assert mid["eta_seconds"] == pytest.approx(mid["pending_chunks"] / mid["chunks_per_second"], rel=0.05, abs=1)

    after = health(client)["active"]
    assert (after["embedded_chunks"], after["pending_chunks"], after["complete"]) == (IMPORTED, 0, True)
    assert after["eta_seconds"] == 0
    assert search("deploy runbook proxy").partial is False
    assert f"All {IMPORTED} chunks are embedded" in client.get("/").content.decode()
    status_after = io.StringIO()
    call_command("brain_embed", "--status", stdout=status_after)
    assert f"{IMPORTED} chunks embedded, 0 pending, 0 notes waiting" in status_after.getvalue()
    assert "Embeddings complete" in status_after.getvalue()
    assert embed_server.texts_embedded >= IMPORTED


def test_a_note_written_after_the_sync_makes_answers_partial_again(imported_brain):
    sync_embeddings(get_embedder())
    backlog.forget()
    assert search("deploy runbook proxy").partial is False

    from brain.actions import do_ingest_note

    do_ingest_note(title="Late note", body="The proxy restarts at night.", wing="concepts")
    backlog.forget()
    assert search("proxy restarts").partial is True
    assert NoteChunk.objects.count() == IMPORTED  # not chunked yet: the sync task has not run


def test_other_models_embeddings_are_listed_but_do_not_count_for_the_active_one(imported_brain, settings):
    sync_embeddings(get_embedder())
    settings.BRAIN_EMBED_MODEL = "another-model"
    report = backlog.status()
    assert report["active"]["model"] == "ollama:another-model"
    assert report["active"]["pending_chunks"] == IMPORTED
    assert {"model": "ollama:fake-embed", "embedded_chunks": IMPORTED} in report["models"]


def test_with_the_embedder_off_there_is_no_backlog_and_search_is_not_partial(db, settings):
    settings.BRAIN_EMBEDDER = "off"
    assert backlog.status()["active"] is None
    out = io.StringIO()
    call_command("brain_embed", "--status", stdout=out)
    assert "BRAIN_EMBEDDER is off" in out.getvalue()
