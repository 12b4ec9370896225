from __future__ import annotations

from collections.abc import Iterator

import pytest

from brain import bm25, floors, vectors
from tests.fakes.embed import FakeEmbedServer


@pytest.fixture
def embed_server() -> Iterator[FakeEmbedServer]:
    server = FakeEmbedServer()
    yield server
    server.stop()


@pytest.fixture
def ollama_settings(settings, embed_server):
    """BRAIN_EMBEDDER=ollama pointed at the fake server (8-dimension model)."""
    settings.BRAIN_EMBEDDER = "ollama"
    settings.BRAIN_EMBED_URL = embed_server.url
    settings.BRAIN_EMBED_MODEL = "fake-embed"
    settings.BRAIN_EMBED_API_KEY = ""
    settings.BRAIN_EMBED_TIMEOUT = 0.5
    return settings


@pytest.fixture(autouse=True)
def fresh_search_state():
    """Each test starts with no cached BM25 index, no remembered HNSW index and no measured spread of the
    brain's notes (new test database)."""
    bm25.reset()
    vectors.forget_indexes()
    floors.forget_spreads()
    yield
    bm25.reset()
    vectors.forget_indexes()
    floors.forget_spreads()


@pytest.fixture
def extractive_answers(settings):
    """brain_answer with no model at all: no embedder, no answer model, no reranker (the answer is the passages)."""
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_ANSWER_MODEL = ""
    settings.BRAIN_RERANKER_URL = ""
    return settings
