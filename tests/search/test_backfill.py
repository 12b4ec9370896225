"""POST /backfill-embeddings and manage.py brain_embed run one embedding sync."""

from __future__ import annotations

import io

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from brain import bm25
from brain.actions import do_ingest_note
from brain.models import Embedding, NoteChunk
from tests.conftest import rest_error

TOKEN = "search-test-token"


@pytest.fixture
def backfill_url(asgi_server, settings, transactional_db, ollama_settings):
    settings.BRAIN_MCP_TOKEN = TOKEN
    bm25.reset()
    return f"{asgi_server}/backfill-embeddings"


def test_backfill_embeds_the_notes_and_reports_counts(backfill_url):
    do_ingest_note(title="Tides", body="## Moon\n\nGravity.\n\n## Sun\n\nLess.", wing="sci")
    response = httpx.post(backfill_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json() == {"added": 2, "deleted": 0, "rechunked": 1, "pending": 0, "errors": []}
    again = httpx.post(backfill_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()
    assert (again["added"], again["deleted"], again["errors"]) == (0, 0, [])
    assert Embedding.objects.count() == 2


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}])
def test_backfill_without_the_brain_token_is_refused_and_writes_nothing(backfill_url, headers):
    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    response = httpx.post(backfill_url, headers=headers, timeout=30)
    assert response.status_code == 401
    rest_error(response)
    assert not NoteChunk.objects.exists() and not Embedding.objects.exists()


def test_backfill_reports_embedder_errors_in_the_answer(backfill_url, embed_server):
    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    embed_server.mode = "error"
    body = httpx.post(backfill_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()
    assert body["added"] == 0 and body["pending"] == 1
    assert len(body["errors"]) == 1 and "HTTP 500" in body["errors"][0]


def test_backfill_with_no_embedder_is_a_503_that_says_what_to_set(backfill_url, settings):
    settings.BRAIN_EMBEDDER = "off"
    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    response = httpx.post(backfill_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert response.status_code == 503
    error = rest_error(response)
    assert "BRAIN_EMBEDDER" in error["message"] and error["code"] == "unavailable"
    assert not Embedding.objects.exists()


@pytest.mark.django_db
def test_brain_embed_prints_a_success_line(ollama_settings):
    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    out, err = io.StringIO(), io.StringIO()
    call_command("brain_embed", stdout=out, stderr=err)
    assert "Embedding sync done: added 1, deleted 0" in out.getvalue()
    assert Embedding.objects.count() == 1


@pytest.mark.django_db
def test_brain_embed_fails_with_the_errors_when_the_embedder_is_down(ollama_settings, embed_server):
    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    embed_server.mode = "error"
    err = io.StringIO()
    with pytest.raises(CommandError, match="Run brain_embed again"):
        call_command("brain_embed", stdout=io.StringIO(), stderr=err)
    assert "HTTP 500" in err.getvalue()
    assert not Embedding.objects.exists()


@pytest.mark.django_db
def test_brain_embed_refuses_to_run_with_the_embedder_off(settings):
    settings.BRAIN_EMBEDDER = "off"
    with pytest.raises(CommandError, match="BRAIN_EMBEDDER is off"):
        call_command("brain_embed", stdout=io.StringIO(), stderr=io.StringIO())


def test_rest_query_answers_from_bm25_marked_degraded_when_the_embedder_is_down(
    backfill_url, asgi_server, embed_server
):
    from brain.embedding_sync import sync_embeddings
    from hyperguild.lib.embedders import get_embedder

    note = do_ingest_note(title="Tides", body="Moon gravity.", wing="sci")
    sync_embeddings(get_embedder())
    headers = {"Authorization": f"Bearer {TOKEN}"}
    healthy = httpx.post(f"{asgi_server}/query", json={"query": "moon"}, headers=headers, timeout=30).json()
    assert healthy["degraded"] is False and healthy["hits"][0]["rankers"] == {"bm25": 1, "vector": 1}
    embed_server.mode = "error"
    response = httpx.post(f"{asgi_server}/query", json={"query": "moon"}, headers=headers, timeout=30)
    assert response.status_code == 200
    body = response.json()
    assert body["degraded"] is True and "HTTP 500" in body["reason"]
    assert [(h["slug"], h["rankers"]) for h in body["hits"]] == [(note.slug, {"bm25": 1})]


def test_a_backfill_while_another_batch_runs_in_the_process_is_answered_429_at_once(backfill_url):
    # Issue 46: a whole embedding pass in one request is batch work; it takes the batch lane like the spool.
    from hyperguild.lib.batches import batch_lane

    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    place = batch_lane.enter()
    assert place is not None
    try:
        busy = httpx.post(backfill_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert busy.status_code == 429 and busy.headers["Retry-After"] == "1"
        assert "HYPERGUILD_BATCH_CONCURRENCY" in rest_error(busy)["message"]
        assert not Embedding.objects.exists()
    finally:
        batch_lane.leave(place)
    assert httpx.post(backfill_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).status_code == 200


@pytest.mark.django_db
def test_brain_embed_takes_no_progress_and_draws_no_bar(ollama_settings):
    """Issue 47: `brain_embed --no-progress` was refused although the other long commands take it."""
    do_ingest_note(title="Tides", body="Moon.", wing="sci")
    out, err = io.StringIO(), io.StringIO()
    call_command("brain_embed", "--no-progress", stdout=out, stderr=err)
    assert "Embedding sync done: added 1" in out.getvalue()
    assert err.getvalue() == ""


@pytest.mark.parametrize(
    "command",
    [
        "brain_embed",
        "brain_import",
        "brain_export",
        "brain_eval",
        "sessions_import",
        "sessions_export",
        "migrate_from_go",
    ],
)
def test_every_long_command_takes_no_progress(command):
    from django.core.management import get_commands, load_command_class

    parser = load_command_class(get_commands()[command], command).create_parser("manage.py", command)
    assert "--no-progress" in parser.format_help()
