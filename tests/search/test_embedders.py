"""The embedding clients against HTTP servers on 127.0.0.1 speaking the Ollama and OpenAI wire formats."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from hyperguild.lib.embedders import (
    ATTEMPTS,
    EmbedderError,
    LocalEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    get_embedder,
)


def test_ollama_embedder_posts_the_model_and_a_list_of_inputs_to_api_embed(embed_server):
    embedder = OllamaEmbedder(embed_server.url, "fake-embed", timeout=2)
    vectors = embedder.embed_documents(["first passage", "second passage"])
    assert len(vectors) == 2 and all(len(v) == 8 for v in vectors)
    request = embed_server.requests[-1]
    assert request["path"] == "/api/embed"
    assert request["body"] == {"model": "fake-embed", "input": ["first passage", "second passage"]}
    assert "Authorization" not in request["headers"]
    assert embedder.dimensions == 8 and embedder.key == "ollama:fake-embed"


def test_openai_embedder_sends_the_bearer_key_and_orders_vectors_by_index(embed_server):
    embedder = OpenAIEmbedder(f"{embed_server.url}/v1", "text-embed-fake", api_key="sk-test", timeout=2)
    texts = ["alpha beta", "gamma delta", "epsilon"]
    vectors = embedder.embed_documents(texts)
    request = embed_server.requests[-1]
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["body"]["model"] == "text-embed-fake" and request["body"]["input"] == texts
    # The fake server answers in reverse order; the client puts them back by index.
    assert vectors == OllamaEmbedder(embed_server.url, "x").embed_documents(texts)


def test_a_query_is_one_vector(embed_server):
    vector = OllamaEmbedder(embed_server.url, "fake-embed").embed_query("what did we decide")
    assert len(vector) == 8 and isinstance(vector[0], float)


def test_an_answer_of_another_dimension_than_the_known_model_is_an_error(embed_server):
    embedder = OllamaEmbedder(embed_server.url, "nomic-embed-text", timeout=2)  # known: 768
    with pytest.raises(EmbedderError, match="8-dimension vector, expected 768"):
        embedder.embed_query("hello")


def test_a_server_that_changes_dimension_midway_is_refused(embed_server):
    embedder = OllamaEmbedder(embed_server.url, "fake-embed", timeout=2)
    embedder.embed_query("learn the size")
    embed_server.mode = "wrong_dimension"
    with pytest.raises(EmbedderError, match="11-dimension vector, expected 8") as caught:
        embedder.embed_documents(["again"])
    assert caught.value.service == "ollama embedder (fake-embed)"


def test_a_5xx_is_retried_once_then_an_error_naming_the_service(embed_server):
    embed_server.mode = "error"
    with pytest.raises(EmbedderError, match=r"ollama embedder \(fake-embed\).*HTTP 500"):
        OllamaEmbedder(embed_server.url, "fake-embed", timeout=2).embed_documents(["hi"])
    assert len(embed_server.requests) == ATTEMPTS


def test_a_query_embedding_gets_one_attempt_a_person_waits_on_it(embed_server):
    embed_server.mode = "error"
    with pytest.raises(EmbedderError, match=r"ollama embedder \(fake-embed\).*after 1 attempt: HTTP 500"):
        OllamaEmbedder(embed_server.url, "fake-embed", timeout=2, query_timeout=1).embed_query("hi")
    assert len(embed_server.requests) == 1


def test_a_4xx_is_not_retried(embed_server):
    with pytest.raises(EmbedderError, match="refused the request with HTTP 404"):
        OllamaEmbedder(f"{embed_server.url}/nowhere", "fake-embed", timeout=2).embed_query("hi")
    assert len(embed_server.requests) == 1


def test_a_timeout_is_an_error(embed_server):
    embed_server.mode = "slow"
    embed_server.slow_seconds = 1.0
    with pytest.raises(EmbedderError, match="timed out after 0.2 s"):
        OpenAIEmbedder(embed_server.url, "m", timeout=0.2).embed_query("hi")


def test_an_unreachable_service_is_an_error(embed_server):
    url = embed_server.url
    embed_server.stop()
    with pytest.raises(EmbedderError, match="unreachable"):
        OllamaEmbedder(url, "fake-embed", timeout=1).embed_query("hi")


def test_the_local_embedder_uses_the_e5_query_and_passage_prefixes():
    embedder = LocalEmbedder()
    [passage] = embedder.embed_documents(["PostgreSQL vacuum removes dead tuples."])
    query = embedder.embed_query("PostgreSQL vacuum removes dead tuples.")
    assert len(passage) == len(query) == 384
    # Same text, different prefixes: close but not the same vector.
    assert passage != query
    assert sum(a * b for a, b in zip(passage, query, strict=True)) > 0.8


def test_get_embedder_follows_the_settings(settings, embed_server):
    settings.BRAIN_EMBEDDER = "off"
    assert get_embedder() is None
    settings.BRAIN_EMBEDDER = "ollama"
    settings.BRAIN_EMBED_URL = embed_server.url
    settings.BRAIN_EMBED_MODEL = ""
    embedder = get_embedder()
    assert isinstance(embedder, OllamaEmbedder) and embedder.model == "nomic-embed-text" and embedder.dimensions == 768
    settings.BRAIN_EMBEDDER = "local"
    assert get_embedder().key == "local:multilingual-e5-small"


@pytest.mark.parametrize(
    ("kind", "url", "model", "variable"),
    [
        ("openai", "", "m", "BRAIN_EMBED_URL"),
        ("openai", "http://127.0.0.1:1", "", "BRAIN_EMBED_MODEL"),
        ("ollama", "", "", "BRAIN_EMBED_URL"),
    ],
)
def test_a_half_configured_embedder_stops_start_up_naming_the_variable(settings, kind, url, model, variable):
    settings.BRAIN_EMBEDDER, settings.BRAIN_EMBED_URL, settings.BRAIN_EMBED_MODEL = kind, url, model
    with pytest.raises(SystemCheckError, match=variable):
        call_command("check")


def test_a_complete_embedder_configuration_passes_the_checks(settings):
    settings.BRAIN_EMBEDDER, settings.BRAIN_EMBED_URL, settings.BRAIN_EMBED_MODEL = "openai", "http://127.0.0.1:1", "m"
    call_command("check")
