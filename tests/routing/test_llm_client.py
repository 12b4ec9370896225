"""The OpenAI-compatible chat client against a fake gateway on 127.0.0.1."""

from __future__ import annotations

import pytest
from django.test import override_settings

from hyperguild.lib.llm import (
    LLMBadResponse,
    LLMClient,
    LLMRejected,
    LLMUnavailable,
    get_llm_client,
)
from hyperguild.lib.modeljson import parse_model_json
from tests.conftest import free_port
from tests.fakes.openai import FakeOpenAI, Reply

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["ok", "bad"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


@pytest.fixture
def gateway(fake_openai):
    """The shared fake gateway, not wired into the settings: these tests build their own clients."""
    return fake_openai


def client_for(gateway: FakeOpenAI, **kwargs) -> LLMClient:
    kwargs.setdefault("backoff", 0.0)
    return LLMClient(gateway.url, "sk-test", **kwargs)


def test_it_posts_an_openai_chat_request_with_the_bearer_key(gateway):
    gateway.on(
        "fast",
        lambda req: Reply.text(
            "hello", model="fast-v1", usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
        ),
    )

    result = client_for(gateway).chat([{"role": "user", "content": "hi"}], model="fast", temperature=0.2, max_tokens=50)

    assert result.text == "hello"
    assert result.model == "fast-v1"
    assert result.usage == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    assert result.latency_ms >= 0
    [request] = gateway.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "fast",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "max_tokens": 50,
    }


def test_it_accepts_a_base_url_that_already_ends_in_v1(gateway):
    gateway.on("fast", lambda req: Reply.text("hi"))
    LLMClient(gateway.url + "/v1/", "").chat([{"role": "user", "content": "x"}], model="fast")
    assert gateway.requests[0].path == "/v1/chat/completions"
    assert "Authorization" not in gateway.requests[0].headers


def test_it_reports_no_usage_when_the_gateway_sends_none(gateway):
    gateway.on("fast", lambda req: Reply.text("hi"))
    assert client_for(gateway).chat([], model="fast").usage is None


def test_it_retries_a_500_and_a_429_then_succeeds(gateway):
    gateway.queue(Reply.error(500), Reply.error(429, "slow down"), Reply.text("finally"))

    result = client_for(gateway, retries=2).chat([], model="fast")

    assert result.text == "finally"
    assert len(gateway.requests) == 3


def test_it_gives_up_after_the_bounded_retries_with_llm_unavailable(gateway):
    gateway.queue(*[Reply.error(503, "overloaded")] * 5)

    with pytest.raises(LLMUnavailable) as caught:
        client_for(gateway, retries=2).chat([], model="fast")

    assert len(gateway.requests) == 3
    assert caught.value.attempts == 3
    assert caught.value.status == 503
    assert "overloaded" in str(caught.value)


def test_a_model_the_gateway_does_not_know_is_rejected_without_retrying(gateway):
    with pytest.raises(LLMRejected) as caught:
        client_for(gateway, retries=2).chat([], model="nope")

    assert len(gateway.requests) == 1
    assert caught.value.status == 400
    assert "Invalid model name passed in model=nope" in caught.value.gateway_message
    assert "'nope'" in str(caught.value)


def test_a_404_model_not_found_is_rejected(gateway):
    gateway.queue(Reply.error(404, "The model `ghost` does not exist"))
    with pytest.raises(LLMRejected) as caught:
        client_for(gateway).chat([], model="ghost")
    assert caught.value.status == 404
    assert "does not exist" in str(caught.value)


def test_a_slow_gateway_times_out_as_unavailable(gateway):
    gateway.queue(Reply.text("late", delay=1.0), Reply.text("late", delay=1.0))

    with pytest.raises(LLMUnavailable) as caught:
        client_for(gateway, timeout=0.2, retries=1).chat([], model="fast")

    assert "timed out" in str(caught.value)
    assert caught.value.attempts == 2


def test_a_closed_port_is_unavailable():
    client = LLMClient(f"http://127.0.0.1:{free_port()}", "", retries=1, backoff=0.0)
    with pytest.raises(LLMUnavailable) as caught:
        client.chat([], model="fast")
    assert "could not connect" in str(caught.value)


def test_a_body_that_is_not_chat_completions_is_a_bad_response(gateway):
    gateway.queue(Reply(200, {"hello": "world"}), Reply(200, raw=b"<html>"))
    client = client_for(gateway)
    with pytest.raises(LLMBadResponse, match="choices"):
        client.chat([], model="fast")
    with pytest.raises(LLMBadResponse, match="not JSON"):
        client.chat([], model="fast")


def test_chat_json_parses_a_fenced_answer_and_validates_it(gateway):
    gateway.on("fast", lambda req: Reply.text('```json\n{"verdict": "ok"}\n```'))

    data, result = client_for(gateway).chat_json([], model="fast", schema=SCHEMA)

    assert data == {"verdict": "ok"}
    assert gateway.requests[0].body["response_format"] == {"type": "json_object"}
    assert result.text.startswith("```json")


def test_chat_json_names_the_schema_violation(gateway):
    gateway.on("fast", lambda req: Reply.json({"verdict": "maybe"}))
    with pytest.raises(LLMBadResponse, match="verdict") as caught:
        client_for(gateway).chat_json([], model="fast", schema=SCHEMA)
    assert caught.value.result.text == '{"verdict": "maybe"}'


def test_chat_json_refuses_prose_and_arrays(gateway):
    gateway.queue(Reply.text("I think it is fine."), Reply.text("[1, 2]"))
    client = client_for(gateway)
    with pytest.raises(LLMBadResponse, match="not JSON"):
        client.chat_json([], model="fast", schema=SCHEMA)
    with pytest.raises(LLMBadResponse, match="not an object"):
        client.chat_json([], model="fast", schema=SCHEMA)


def test_parse_model_json_takes_the_object_out_of_surrounding_prose():
    assert parse_model_json('Here it is: {"a": 1} hope that helps') == {"a": 1}


def test_there_is_no_client_when_no_gateway_is_configured():
    with override_settings(LITELLM_BASE_URL=""):
        assert get_llm_client() is None
    with override_settings(LITELLM_BASE_URL="http://127.0.0.1:1", LITELLM_API_KEY="k"):
        client = get_llm_client()
        assert client is not None and client.api_key == "k"
        assert get_llm_client() is client
