"""The system check that catches an answer model with no gateway to ask."""

from __future__ import annotations

from brain.system_checks import check_answer_model


def test_an_answer_model_without_a_gateway_is_a_warning(settings):
    settings.BRAIN_ANSWER_MODEL = "answer-model"
    settings.LITELLM_BASE_URL = ""

    problems = check_answer_model(None)

    assert [problem.id for problem in problems] == ["hyperguild.W040"]
    assert "LITELLM_BASE_URL" in problems[0].msg


def test_an_answer_model_with_a_gateway_or_no_answer_model_is_fine(settings):
    settings.BRAIN_ANSWER_MODEL = "answer-model"
    settings.LITELLM_BASE_URL = "http://127.0.0.1:4000"
    assert check_answer_model(None) == []

    settings.BRAIN_ANSWER_MODEL = ""
    settings.LITELLM_BASE_URL = ""
    assert check_answer_model(None) == []
