"""brain_answer end to end: the MCP endpoint, a fake Ollama reranker and a fake OpenAI gateway on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from brain.answers import mentions
from brain.models import Note
from brain.search import search
from hyperguild.lib.reranker import build_prompt
from tests.answers.conftest import HYPERGUILD_NOTES, ingest
from tests.conftest import call_tool, free_port, mcp_post, rpc
from tests.fakes.openai import FakeOpenAI, Reply
from tests.fakes.reranker import FakeReranker, document_of, query_of

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "why did every LiteLLM call fail with an unknown model error?"
RERANKER_MODEL = "dengcao/Qwen3-Reranker-0.6B:F16"
ANSWER_MODEL = "answer-model"


def relevant_only(prompt: str) -> str:
    """Judge like the real model would here: only the config-drift note answers the question."""
    return "yes" if "LiteLLM config drift" in document_of(prompt) else "no"


@pytest.fixture
def brain(transactional_db):
    return ingest(HYPERGUILD_NOTES)


@pytest.fixture
def reranker_on(settings):
    def turn_on(judge, **options) -> FakeReranker:
        fake = FakeReranker(judge, **options).__enter__()
        settings.BRAIN_RERANKER_URL = fake.url
        settings.BRAIN_RERANKER_MODEL = RERANKER_MODEL
        settings.BRAIN_RERANKER_CONCURRENCY = 3
        started.append(fake)
        return fake

    started: list[FakeReranker] = []
    yield turn_on
    for fake in started:
        fake.__exit__()


@pytest.fixture
def llm_on(settings):
    with FakeOpenAI() as gateway:
        settings.LITELLM_BASE_URL = gateway.url
        settings.LITELLM_API_KEY = "sk-test"
        settings.BRAIN_ANSWER_MODEL = ANSWER_MODEL
        yield gateway


def test_only_the_note_the_reranker_keeps_reaches_the_llm(brain, brain_url, reranker_on, llm_on, settings):
    # BM25 floor off: the noise ("LLM gateway" only says LiteLLM) reaches the reranker, which must drop it.
    # (With the floor on, search already leaves it out: see tests/search/test_relevance_floors.py.)
    settings.BRAIN_BM25_FLOOR = 0.0
    ollama = reranker_on(relevant_only)
    llm_on.on(
        ANSWER_MODEL, lambda request: Reply.text("A model alias vanished from the LAN config [1].", model=ANSWER_MODEL)
    )

    result = call_tool(brain_url, "brain_answer", {"question": QUESTION})

    assert result.get("isError") is not True, result
    answer = result["structuredContent"]
    assert answer == {
        "answer": "A model alias vanished from the LAN config [1].",
        "sources": [
            {
                "n": 1,
                "slug": "litellm-config-drift",
                "title": "LiteLLM config drift",
                "path": Note.objects.get(slug="litellm-config-drift").path,
                "excerpt": answer["sources"][0]["excerpt"],
                # issue 38: every source says whether it still holds against its project's code
                "verification": {
                    "state": "unverified",
                    "commit": None,
                    "evidence": [],
                    "unresolved": [],
                    # issue 45: a note that claims nothing about code is shown with no label; the reason stays
                    "label": "",
                    "reason": "unverified: the note belongs to no project, so there is no code to check it against",
                },
            }
        ],
        "model": ANSWER_MODEL,
        "reranked": True,
        "synthesized": True,
        "unreviewed_matches": 0,  # issue 28: raw matches are counted and named, never cited
        "unreviewed": [],
        "unreviewed_hint": None,
        # One record for the reranker's pass, one for the answer; neither fake reports usage (issue 39).
        "usage": {
            "input_tokens": None,
            "output_tokens": None,
            "cost_usd": None,
            "cost_reason": "usage unknown",
            "model": f"{RERANKER_MODEL}, {ANSWER_MODEL}",
            "calls": 2,
        },
    }
    assert "LiteLLM" in answer["sources"][0]["excerpt"]

    # The reranker judged every retrieved candidate that mentions what the question names (LiteLLM; issue 45: the
    # others cannot answer it), the noise among them, each in the exact template, with the question.
    naming = [hit for hit in search(QUESTION, limit=20).hits if mentions(Note.objects.get(pk=hit.note_id), ["LiteLLM"])]
    assert len(ollama.requests) == len(naming) >= 2
    for request in ollama.requests:
        body = request["body"]
        assert request["path"] == "/api/generate"
        assert body["model"] == RERANKER_MODEL
        assert body["raw"] is True and body["stream"] is False
        assert query_of(body["prompt"]) == QUESTION
        assert body["prompt"] == build_prompt(QUESTION, document_of(body["prompt"]))
    judged = [document_of(prompt).split("\n", 1)[0] for prompt in ollama.prompts()]
    assert "LiteLLM config drift" in judged
    assert "LLM gateway" in judged  # the noise the reranker rejected

    # One chat completion, with the kept note as source [1] and nothing of the rejected one.
    assert len(llm_on.requests) == 1
    request = llm_on.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers.get("Authorization") == "Bearer sk-test"
    assert request.body["model"] == ANSWER_MODEL
    system, user = request.body["messages"]
    assert system["role"] == "system"
    assert "only" in system["content"] and "[1]" in system["content"]
    assert user["role"] == "user"
    assert "[1] LiteLLM config drift (litellm-config-drift)\n" in user["content"]  # no project: no label (issue 45)
    assert "a model alias vanished" in user["content"]
    assert "[2]" not in user["content"]
    assert "LLM gateway" not in user["content"]
    assert user["content"].endswith(f"Question: {QUESTION}")


def test_sources_are_numbered_in_retrieval_order_as_the_llm_sees_them(brain, brain_url, llm_on):
    llm_on.on(ANSWER_MODEL, lambda request: Reply.text("See [1] and [2].", model=ANSWER_MODEL))

    answer = call_tool(brain_url, "brain_answer", {"question": "LiteLLM", "limit": 2})["structuredContent"]

    assert answer["reranked"] is False
    assert [source["n"] for source in answer["sources"]] == [1, 2]
    user = llm_on.requests[0].body["messages"][1]["content"]
    for source in answer["sources"]:
        label = source["verification"]["label"]
        assert f"[{source['n']}] {source['title']} ({source['slug']}{'; ' + label if label else ''})" in user
    assert user.index("[1] ") < user.index("[2] ")


def test_the_llm_never_gets_more_than_five_sources(brain, brain_url, llm_on):
    ingest(
        [
            {
                "slug": f"hyperguild-extra-{n}",
                "title": f"hyperguild extra {n}",
                "wing": "concepts",
                "body": "hyperguild.",
            }
            for n in range(4)
        ]
    )
    llm_on.on(ANSWER_MODEL, lambda request: Reply.text("[1]", model=ANSWER_MODEL))

    answer = call_tool(brain_url, "brain_answer", {"question": "hyperguild", "limit": 10})["structuredContent"]

    assert len(answer["sources"]) == 5
    assert "[6]" not in llm_on.requests[0].body["messages"][1]["content"]


def test_when_the_reranker_keeps_nothing_it_says_so_and_calls_no_llm(brain, brain_url, reranker_on, llm_on):
    ollama = reranker_on(lambda prompt: "no")

    answer = call_tool(brain_url, "brain_answer", {"question": QUESTION})["structuredContent"]

    assert answer["sources"] == []
    assert answer["synthesized"] is False
    assert answer["reranked"] is True
    assert answer["model"] is None
    assert "no note" in answer["answer"]
    assert ollama.requests
    assert llm_on.requests == []


def test_ambiguous_reranker_output_scores_zero_and_nothing_is_answered(brain, brain_url, reranker_on, llm_on):
    reranker_on(lambda prompt: "The document might be relevant")

    answer = call_tool(brain_url, "brain_answer", {"question": QUESTION})["structuredContent"]

    assert answer["sources"] == []
    assert llm_on.requests == []


def test_a_question_nothing_matches_makes_no_reranker_or_llm_call(brain, brain_url, reranker_on, llm_on):
    ollama = reranker_on(lambda prompt: "yes")

    answer = call_tool(brain_url, "brain_answer", {"question": "zyxwvut qqqq"})["structuredContent"]

    assert answer["sources"] == []
    assert ollama.requests == []
    assert llm_on.requests == []


def test_the_reranker_never_has_more_than_its_concurrency_in_flight(brain, brain_url, reranker_on, llm_on):
    ollama = reranker_on(relevant_only, delay=0.1)
    llm_on.on(ANSWER_MODEL, lambda request: Reply.text("[1]", model=ANSWER_MODEL))

    # Every hyperguild note passes the floors for this question, so the reranker has plenty to judge.
    call_tool(brain_url, "brain_answer", {"question": "hyperguild"})

    print(f"brain_answer: {len(ollama.requests)} reranker calls, most in flight at once: {ollama.max_in_flight}")
    assert len(ollama.requests) >= 4
    assert 1 <= ollama.max_in_flight <= 3


def test_a_reranker_outage_is_an_error_result_naming_the_reranker(brain, brain_url, settings, llm_on):
    settings.BRAIN_RERANKER_URL = f"http://127.0.0.1:{free_port()}"

    result = call_tool(brain_url, "brain_answer", {"question": QUESTION})

    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "reranker" in text
    assert settings.BRAIN_RERANKER_URL in text
    assert llm_on.requests == []


def test_an_llm_outage_is_an_error_result_naming_the_llm(brain, brain_url, llm_on):
    llm_on.on(ANSWER_MODEL, lambda request: Reply.error(503, "upstream overloaded"))

    result = call_tool(brain_url, "brain_answer", {"question": QUESTION})

    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "LLM" in text and ANSWER_MODEL in text
    assert "503" in text


def test_an_unreachable_llm_is_an_error_result_too(brain, brain_url, settings):
    settings.LITELLM_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.BRAIN_ANSWER_MODEL = ANSWER_MODEL

    result = call_tool(brain_url, "brain_answer", {"question": QUESTION})

    assert result["isError"] is True
    assert "LLM" in result["content"][0]["text"]


def test_without_an_llm_it_returns_passages_marked_not_synthesized(brain, brain_url):
    result = call_tool(brain_url, "brain_answer", {"question": QUESTION, "limit": 3})

    answer = result["structuredContent"]
    assert answer["synthesized"] is False
    assert answer["model"] is None
    assert answer["reranked"] is False
    assert answer["sources"][0]["slug"] == "litellm-config-drift"
    assert 1 <= len(answer["sources"]) <= 3
    assert answer["answer"].startswith("[1] LiteLLM config drift: ")  # no project: no label (issue 45)
    assert "unknown model error" in answer["answer"]
    # The text copy carries the same structure.
    assert json.loads(result["content"][0]["text"]) == answer


def test_an_answer_model_without_a_gateway_stays_extractive(brain, brain_url, settings):
    settings.BRAIN_ANSWER_MODEL = ANSWER_MODEL

    answer = call_tool(brain_url, "brain_answer", {"question": QUESTION})["structuredContent"]

    assert answer["synthesized"] is False


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"question": ""},
        {"question": "   "},
        {"question": "ok", "limit": 0},
        {"question": "ok", "limit": 11},
        {"question": "ok", "extra": True},
    ],
)
def test_bad_arguments_are_refused_before_any_call(brain, brain_url, reranker_on, llm_on, arguments):
    ollama = reranker_on(lambda prompt: "yes")
    notes_before = Note.objects.count()

    response = mcp_post(brain_url, rpc("tools/call", {"name": "brain_answer", "arguments": arguments}))

    body = response.json()
    assert "error" in body or body["result"]["isError"] is True
    assert ollama.requests == []
    assert llm_on.requests == []
    assert Note.objects.count() == notes_before


def test_a_wrong_token_is_refused(brain, brain_url, settings, llm_on):
    settings.BRAIN_MCP_TOKEN = "right-token"

    response = mcp_post(
        brain_url,
        rpc("tools/call", {"name": "brain_answer", "arguments": {"question": QUESTION}}),
        headers={"Authorization": "Bearer wrong-token"},
    )

    assert response.status_code == 401
    assert llm_on.requests == []


def test_the_tool_is_listed_read_only_and_open_world(brain_url, transactional_db):
    tools = {tool["name"]: tool for tool in mcp_post(brain_url, rpc("tools/list")).json()["result"]["tools"]}
    tool = tools["brain_answer"]
    assert tool["annotations"]["readOnlyHint"] is True
    assert tool["annotations"]["destructiveHint"] is False
    assert tool["annotations"]["openWorldHint"] is True
    assert tool["inputSchema"]["required"] == ["question"]
    assert set(tool["inputSchema"]["properties"]) == {"question", "limit"}
    assert tool["inputSchema"]["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "default": 5,
        "description": "most sources to use (an LLM gets at most 5)",
    }
    assert set(tool["outputSchema"]["required"]) == {
        "answer",
        "sources",
        "model",
        "reranked",
        "synthesized",
        "unreviewed_matches",
        "unreviewed",
        "unreviewed_hint",
    }
