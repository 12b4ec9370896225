"""Brain test helpers: a brain endpoint URL with a token, a seeded corpus."""

from __future__ import annotations

import pytest

BRAIN_TOKEN = "brain-test-token"
AUTH = {"Authorization": f"Bearer {BRAIN_TOKEN}"}


@pytest.fixture
def brain_server(asgi_server, settings, transactional_db):
    """(base URL, MCP URL) with BRAIN_MCP_TOKEN set and a fresh in-process search index."""
    from brain import bm25

    settings.BRAIN_MCP_TOKEN = BRAIN_TOKEN
    settings.BRAIN_EMBEDDER = "off"  # BM25 only: no embedding work queued by writes
    bm25.reset()  # the test database is emptied between tests; the version counter starts over
    yield asgi_server, f"{asgi_server}/mcp/brain"
    bm25.reset()


@pytest.fixture
def corpus(brain_server):
    from brain.actions import do_ingest_note, do_write_raw_note

    notes = {
        "asyncio": do_ingest_note(
            title="Asyncio event loop",
            body="The asyncio event loop runs coroutines. See [[gil]].",
            wing="concepts",
            hall="python",
        ),
        "gil": do_ingest_note(
            title="The GIL",
            body="The global interpreter lock serialises Python bytecode.",
            wing="concepts",
            hall="python",
            slug="gil",
        ),
        "vacuum": do_ingest_note(
            title="PostgreSQL vacuum",
            body="Vacuum reclaims dead tuples in PostgreSQL tables.",
            wing="concepts",
            hall="databases",
        ),
        "paper": do_ingest_note(
            title="Paper on event loops",
            body="A survey of event loop designs across runtimes.",
            wing="sources",
        ),
        "raw": do_write_raw_note(title="Raw idea about event loops", body="Maybe pin the event loop policy."),
    }
    return notes
