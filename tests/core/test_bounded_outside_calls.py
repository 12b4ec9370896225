"""Issue 17 problem 2: a service that accepts connections and never answers costs a bounded wait.

The stand-in is a real TCP server on 127.0.0.1 that accepts every connection, reads what
it is sent and never writes a byte back. Before the fix each brain_query waited two
attempts x BRAIN_EMBED_TIMEOUT (60 s) on every call, with no breaker.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.test import Client

from hyperguild.lib.http import breaker_states, reset_breakers
from hyperguild.lib.llm import LLMUnavailable, get_llm_client
from hyperguild.lib.reranker import RerankerError, get_reranker

pytestmark = pytest.mark.django_db


class SilentServer:
    """Accepts connections and never answers; counts the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.held: list[socket.socket] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent_server():
    reset_breakers()
    server = SilentServer()
    yield server
    server.close()
    reset_breakers()


def breaker_of(prefix: str) -> dict:
    matches = [state for key, state in breaker_states().items() if key.startswith(prefix)]
    assert len(matches) == 1, breaker_states()
    return matches[0]


def test_a_silent_embedder_costs_one_short_attempt_per_query_then_its_breaker_opens(silent_server, settings):
    from brain import bm25
    from brain.actions import do_ingest_note

    settings.BRAIN_EMBEDDER = "ollama"
    settings.BRAIN_EMBED_URL = silent_server.url
    settings.BRAIN_EMBED_TIMEOUT = 30.0  # what indexing may take; the query path must not wait this long
    settings.BRAIN_QUERY_EMBED_TIMEOUT = 0.3
    settings.HYPERGUILD_BREAKER_FAILURES = 3
    settings.HYPERGUILD_BREAKER_COOLDOWN_SECONDS = 60.0
    settings.BRAIN_MCP_TOKEN = "t"
    bm25.reset()
    settings.BRAIN_EMBEDDER = "off"
    do_ingest_note(title="Event loops", body="The asyncio event loop runs coroutines.", wing="concepts")
    settings.BRAIN_EMBEDDER = "ollama"
    client = Client()

    started = time.monotonic()
    for attempt in range(1, 4):
        response = client.post(
            "/query", {"query": "event loop"}, content_type="application/json", HTTP_AUTHORIZATION="Bearer t"
        )
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["degraded"] is True and [hit["slug"] for hit in body["hits"]] == ["event-loops"]
        assert silent_server.connections == attempt  # one attempt per query: no retry on the query path
    assert breaker_of("ollama embedder")["state"] == "open"

    # Open: the next queries do not even connect.
    for _ in range(3):
        response = client.post(
            "/query", {"query": "event loop"}, content_type="application/json", HTTP_AUTHORIZATION="Bearer t"
        )
        assert response.status_code == 200 and response.json()["degraded"] is True
    assert silent_server.connections == 3
    # Six queries, bounded by three short timeouts (before: 6 x 2 x 30 s).
    assert time.monotonic() - started < 20

    health = client.get("/health").json()
    states = {key: value["state"] for key, value in health["services"].items()}
    assert any(key.startswith("ollama embedder") and state == "open" for key, state in states.items()), states
    bm25.reset()


def test_a_silent_reranker_gets_one_short_attempt_and_opens_its_breaker(silent_server, settings):
    settings.BRAIN_RERANKER_URL = silent_server.url
    settings.BRAIN_RERANKER_TIMEOUT = 0.3
    settings.BRAIN_RERANKER_CONCURRENCY = 1
    settings.HYPERGUILD_BREAKER_FAILURES = 2
    reranker = get_reranker()
    for _ in range(2):
        with pytest.raises(RerankerError):
            reranker.judge("query", "document")
    assert silent_server.connections == 2  # BRAIN_RERANKER_RETRIES=0: no second attempt
    assert breaker_of("reranker")["state"] == "open"
    with pytest.raises(RerankerError, match="unavailable"):
        reranker.judge("query", "document")
    assert silent_server.connections == 2


def test_a_silent_llm_gateway_is_bounded_by_its_timeout_and_opens_its_breaker(silent_server, settings):
    settings.LITELLM_BASE_URL = silent_server.url
    settings.LITELLM_TIMEOUT = 0.3
    settings.LITELLM_RETRIES = 0
    settings.HYPERGUILD_BREAKER_FAILURES = 2
    llm = get_llm_client()
    for _ in range(2):
        with pytest.raises(LLMUnavailable, match="timed out after 0.3 s"):
            llm.chat([{"role": "user", "content": "hi"}], model="m")
    assert silent_server.connections == 2
    assert breaker_of("")["state"] == "open"
    with pytest.raises(LLMUnavailable, match="calls in a row failed"):
        llm.chat([{"role": "user", "content": "hi"}], model="m")
    assert silent_server.connections == 2


def test_health_lists_every_breaker_state(client, settings):
    reset_breakers()
    body = client.get("/health").json()
    assert body["services"] == {}
