"""The Qwen3-Reranker filter against a fake Ollama on 127.0.0.1."""

from __future__ import annotations

import pytest

from hyperguild.lib.reranker import RerankerClient, RerankerError, build_prompt, score_response
from tests.conftest import free_port
from tests.fakes.reranker import FakeReranker, document_of

# The published Qwen3-Reranker prompt, spelled out here so that a change to the template is a decision.
EXPECTED_PROMPT = (
    "<|im_start|>system\n"
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n"
    "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: how do we deploy?\n"
    "<Document>: Deploy with make run.<|im_end|>\n"
    "<|im_start|>assistant\n"
    "<think>\n\n</think>\n\n"
)


def test_the_prompt_is_qwen3_rerankers_own_template_word_for_word():
    assert build_prompt("how do we deploy?", "Deploy with make run.") == EXPECTED_PROMPT


@pytest.mark.parametrize(
    "response, score",
    [
        ("yes", 1.0),
        ("Yes", 1.0),
        (" yes\n", 1.0),
        ("yes.", 1.0),
        ("<think>\nthe document is about deploys\n</think>\n\nyes", 1.0),
        ("no", 0.0),
        ("<think>it mentions deploys</think>no", 0.0),
        ("maybe", 0.0),
        ("yesterday", 0.0),
        ("", 0.0),
        ("<think>still thinking about", 0.0),
        ("The answer is yes", 0.0),
    ],
)
def test_the_first_word_after_any_think_block_decides_and_anything_ambiguous_scores_zero(response, score):
    assert score_response(response) == score


def test_it_keeps_yes_drops_no_and_keeps_retrieval_order():
    def judge(prompt: str) -> str:
        return "yes" if "deploy" in document_of(prompt) else "no"

    documents = ["deploy one", "pasta", "deploy two", "ingress", "deploy three"]
    with FakeReranker(judge) as ollama:
        client = RerankerClient(ollama.url, "dengcao/Qwen3-Reranker-0.6B:F16", concurrency=3, retries=0)
        kept = client.filter("how do we deploy?", documents, text=lambda doc: doc)

    assert kept == ["deploy one", "deploy two", "deploy three"]
    assert len(ollama.requests) == 5
    body = ollama.requests[0]["body"]
    assert ollama.requests[0]["path"] == "/api/generate"
    assert body["model"] == "dengcao/Qwen3-Reranker-0.6B:F16"
    assert body["stream"] is False
    assert body["raw"] is True
    assert body["options"]["temperature"] == 0
    assert 1 <= body["options"]["num_predict"] <= 16
    assert sorted(ollama.prompts()) == sorted(build_prompt("how do we deploy?", doc) for doc in documents)


def test_ambiguous_output_drops_the_candidate():
    with FakeReranker(lambda prompt: "perhaps, it depends") as ollama:
        client = RerankerClient(ollama.url, "m", concurrency=2, retries=0)
        assert client.filter("q", ["a", "b"], text=lambda doc: doc) == []
    assert len(ollama.requests) == 2


def test_an_empty_candidate_list_makes_no_calls():
    with FakeReranker(lambda prompt: "yes") as ollama:
        client = RerankerClient(ollama.url, "m", concurrency=4, retries=0)
        assert client.filter("q", [], text=lambda doc: doc) == []
    assert ollama.requests == []


def test_at_most_concurrency_requests_are_in_flight():
    documents = [f"document {n}" for n in range(9)]
    with FakeReranker(lambda prompt: "yes", delay=0.15) as ollama:
        client = RerankerClient(ollama.url, "m", concurrency=3, retries=0)
        kept = client.filter("q", documents, text=lambda doc: doc)

    print(f"reranker: 9 candidates, concurrency 3, most in flight at once: {ollama.max_in_flight}")
    assert kept == documents
    assert len(ollama.requests) == 9
    assert 1 <= ollama.max_in_flight <= 3


def test_an_unreachable_reranker_raises_an_error_naming_the_service():
    url = f"http://127.0.0.1:{free_port()}"
    client = RerankerClient(url, "m", concurrency=2, retries=1)
    with pytest.raises(RerankerError) as raised:
        client.filter("q", ["a", "b", "c"], text=lambda doc: doc)
    assert "reranker" in str(raised.value)
    assert url in str(raised.value)


def test_a_reranker_that_fails_with_500_raises_after_its_retries():
    with FakeReranker(lambda prompt: "yes", status=500) as ollama:
        client = RerankerClient(ollama.url, "m", concurrency=1, retries=1)
        with pytest.raises(RerankerError, match="reranker .* unavailable after 2 attempts"):
            client.filter("q", ["a"], text=lambda doc: doc)
    assert len(ollama.requests) == 2


def test_a_missing_model_is_refused_without_retries():
    with FakeReranker(lambda prompt: "yes", status=404) as ollama:
        client = RerankerClient(ollama.url, "not-pulled", concurrency=1, retries=2)
        with pytest.raises(RerankerError, match="refused model 'not-pulled'"):
            client.filter("q", ["a"], text=lambda doc: doc)
    assert len(ollama.requests) == 1
