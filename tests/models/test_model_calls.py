"""Every model call the service makes is kept as a ModelCall: what was sent, what came back, how it ended."""

from __future__ import annotations

import pytest

from hyperguild.lib.llm import LLMBadResponse, LLMRejected, LLMTruncated, LLMUnavailable, get_llm_client
from hyperguild.lib.model_calls import model_call_context, recorded_calls
from ledger.models import ModelCall
from tests.conftest import free_port
from tests.fakes.openai import Reply

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}


def _length_reply(content: str) -> Reply:
    reply = Reply.text(content, usage={"prompt_tokens": 10, "completion_tokens": 7})
    reply.body["choices"][0]["finish_reason"] = "length"
    return reply


def test_a_successful_call_is_kept_with_its_request_raw_response_tokens_and_who_made_it(gateway, django_user_model):
    person = django_user_model.objects.create(username="ada")
    gateway.queue(Reply.text("hello [1]", usage={"prompt_tokens": 12, "completion_tokens": 3}))
    with model_call_context(requested_by=person, skill="brain_answer", session_id="s-1", project="/repo"):
        result = get_llm_client().chat([{"role": "user", "content": "hi"}], model="fast", purpose="answer")
        assert recorded_calls() == [result.call_id]
    call = ModelCall.objects.get(pk=result.call_id)
    assert (call.outcome, call.provider, call.model, call.purpose, call.skill) == (
        "ok",
        "openai",
        "fast",
        "answer",
        "brain_answer",
    )
    assert (call.requested_by, call.session_id, call.project) == (person, "s-1", "/repo")
    assert call.request["messages"] == [{"role": "user", "content": "hi"}]
    assert call.request["max_tokens"] == call.max_tokens == 600
    assert '"content": "hello [1]"' in call.response
    assert (call.input_tokens, call.output_tokens, call.finish_reason) == (12, 3, "stop")
    assert call.endpoint == f"{gateway.url}/v1/chat/completions"
    assert call.cost_usd is None


def test_a_call_cut_at_the_limit_is_known_as_truncated(gateway):
    gateway.queue(_length_reply("and so on and so"))
    result = get_llm_client().chat([{"role": "user", "content": "go"}], model="fast", purpose="answer", max_tokens=7)
    assert result.truncated
    call = ModelCall.objects.get(pk=result.call_id)
    assert (call.outcome, call.finish_reason, call.max_tokens) == ("truncated", "length", 7)
    assert "cut at the limit of 7 tokens" in call.error


def test_a_json_answer_cut_at_the_limit_raises_truncated_and_is_recorded(gateway):
    gateway.queue(_length_reply('{"ok": tr'))
    with pytest.raises(LLMTruncated) as caught:
        get_llm_client().chat_json([{"role": "user", "content": "go"}], model="fast", schema=SCHEMA, purpose="review")
    assert ModelCall.objects.get(pk=caught.value.call_id).outcome == "truncated"


def test_a_json_answer_of_the_wrong_shape_is_recorded_as_bad_output_with_the_models_text(gateway):
    gateway.queue(Reply.json({"learning": []}))
    with pytest.raises(LLMBadResponse) as caught:
        get_llm_client().chat_json([{"role": "user", "content": "go"}], model="fast", schema=SCHEMA, purpose="review")
    call = ModelCall.objects.get(pk=caught.value.call_id)
    assert call.outcome == "bad_output"
    assert "learning" in call.response and "ok" in call.error


def test_a_refused_model_is_a_model_error(gateway):
    gateway.queue(Reply.model_not_found("nope"))
    with pytest.raises(LLMRejected) as caught:
        get_llm_client().chat([{"role": "user", "content": "go"}], model="nope", purpose="answer")
    call = ModelCall.objects.get(pk=caught.value.call_id)
    assert (call.outcome, call.status_code) == ("model_error", 400)
    assert call.counts_against_model


def test_a_gateway_that_is_down_or_failing_is_an_outage_not_a_model_failure(settings, gateway):
    gateway.queue(Reply.error(503, "overloaded"))
    with pytest.raises(LLMUnavailable) as caught:
        get_llm_client().chat([{"role": "user", "content": "go"}], model="fast", purpose="answer")
    assert ModelCall.objects.get(pk=caught.value.call_id).outcome == "outage"

    settings.LITELLM_BASE_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(LLMUnavailable) as caught:
        get_llm_client().chat([{"role": "user", "content": "go"}], model="fast", purpose="answer")
    call = ModelCall.objects.get(pk=caught.value.call_id)
    assert call.outcome == "outage" and not call.counts_against_model
    assert call.request["model"] == "fast"


def test_a_secret_in_the_request_or_the_answer_is_redacted_before_it_is_stored(gateway):
    gateway.queue(Reply.text("your key is AKIAABCDEFGHIJKLMNOP"))
    result = get_llm_client().chat(
        [{"role": "user", "content": "api_key=supersecretvalue123"}], model="fast", purpose="answer"
    )
    call = ModelCall.objects.get(pk=result.call_id)
    assert "supersecretvalue123" not in str(call.request) and "AKIAABCDEFGHIJKLMNOP" not in call.response
    assert {flag["field"] for flag in call.redactions} == {"request", "response"}


def test_a_huge_response_is_capped(gateway):
    gateway.queue(Reply.text("x" * (ModelCall.BODY_CAP + 5000)))
    result = get_llm_client().chat([{"role": "user", "content": "go"}], model="fast", purpose="answer")
    call = ModelCall.objects.get(pk=result.call_id)
    assert len(call.response) < ModelCall.BODY_CAP + 100 and "more characters]" in call.response


def test_the_admin_lists_model_calls_and_nobody_can_add_or_change_one(gateway, admin_client):
    gateway.queue(Reply.text("hi"))
    result = get_llm_client().chat([{"role": "user", "content": "go"}], model="fast", purpose="answer")
    assert admin_client.get("/admin/ledger/modelcall/").status_code == 200
    assert admin_client.get(f"/admin/ledger/modelcall/{result.call_id}/change/").status_code == 200
    assert admin_client.get("/admin/ledger/modelcall/add/").status_code == 403
    admin_client.post(f"/admin/ledger/modelcall/{result.call_id}/change/", {"model": "changed"})
    assert ModelCall.objects.get(pk=result.call_id).model == "fast"
    assert admin_client.post(f"/admin/ledger/modelcall/{result.call_id}/delete/", {"post": "yes"}).status_code == 403


def test_a_nested_context_sees_only_its_own_calls_and_the_outer_one_sees_all(gateway):
    gateway.default = lambda request: Reply.text("hi")
    client = get_llm_client()
    with model_call_context(skill="review") as outer:
        first = client.chat([{"role": "user", "content": "1"}], model="fast", purpose="review").call_id
        with model_call_context(session_id="s-2") as inner:
            second = client.chat([{"role": "user", "content": "2"}], model="fast", purpose="review").call_id
    assert (outer.recorded, inner.recorded) == ([first, second], [second])
    assert ModelCall.objects.get(pk=second).skill == "review"  # inherited from the outer context


SECRETS_BEHIND_ESCAPES = [
    ('password = "hunter2-correct-horse"', "hunter2-correct-horse"),
    ('api_key: "zq8X7v6b5n4m3l2kq1"', "zq8X7v6b5n4m3l2kq1"),
    ("the key AKIA\u200bABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOP"),
    ("the key sk-\u00adabcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"),
]


@pytest.mark.parametrize("text,secret", SECRETS_BEHIND_ESCAPES)
def test_a_secret_behind_json_escapes_in_the_raw_answer_is_redacted_on_its_decoded_text(gateway, text, secret):
    # Issue 46, finding 7: the raw response is JSON text; `\"` and `\uXXXX` escapes hid these from the patterns.
    gateway.queue(Reply.text(f"Here it is: {text}"))
    result = get_llm_client().chat([{"role": "user", "content": f"remember {text}"}], model="fast", purpose="answer")
    call = ModelCall.objects.get(pk=result.call_id)
    assert secret not in call.response and secret not in str(call.request)
    assert "[REDACTED:" in call.response
    assert {flag["field"] for flag in call.redactions} == {"request", "response"}
