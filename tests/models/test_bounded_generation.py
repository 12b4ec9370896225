"""Every generation request the service sends carries its limit: `max_tokens` on the OpenAI wire,
`options.num_predict` on Ollama's, per purpose (the setting LLM_MAX_TOKENS_ANSWER for brain_answer, the constants
hyperguild.lib.llm.MAX_TOKENS for the others). Each caller is run
against the fakes and the bodies they received are read."""

from __future__ import annotations

import sys

import pytest
from django.core.cache import cache

from brain import bm25
from brain.actions import do_ingest_note
from brain.answers import answer
from hyperguild.lib import llm
from ledger.models import ModelCall
from sessions.actions import do_log_entry
from sessions.retrospective import run_retrospective
from sessions.routed_skills import routed_retrospective_result
from supervisor import routing_service
from supervisor.skills import DebugInput, RetrospectiveInput, ReviewInput
from tests.fakes.openai import Reply
from tests.fakes.reranker import FakeReranker
from tests.routing.conftest import GOOD_REVIEW

pytestmark = pytest.mark.django_db

LIMITS = {"ANSWER": 111, "RETROSPECTIVE": 222, "REVIEW": 333, "DEBUG": 444, "SUMMARY": 55}
LEARNINGS = {
    "learnings": [
        {"title": "Pin the port", "body": "Tests flaked until pinned.", "kind": "correction", "evidence": [1, 2]}
    ]
}
DIAGNOSIS = {
    "hypotheses": [{"hypothesis": "add subtracts", "evidence": "4 != 0"}],
    "root_cause": "add subtracts",
    "fix": "return a + b",
    "findings": GOOD_REVIEW["findings"],
}


def scripted(request: dict) -> Reply:
    system = request["messages"][0]["content"]
    if system.startswith("You answer questions"):
        return Reply.text("Open /review and press Promote [1].")
    if system.startswith("You review the log"):
        return Reply.json(LEARNINGS)
    if system.startswith("Summarise"):
        return Reply.text("defines add")
    if "debug" in system.lower() and "hypothes" in system.lower():
        return Reply.json(DIAGNOSIS)
    return Reply.json(GOOD_REVIEW)


@pytest.fixture(autouse=True)
def limits(settings, gateway, monkeypatch):
    settings.LLM_MAX_TOKENS_ANSWER = LIMITS["ANSWER"]
    for purpose, limit in LIMITS.items():
        if purpose != "ANSWER":
            monkeypatch.setitem(llm.MAX_TOKENS, purpose.lower(), limit)
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_ANSWER_MODEL = "fast"
    settings.HYPERGUILD_FAST_MODEL = settings.HYPERGUILD_THINKING_MODEL = "fast"  # one model: no coin toss
    gateway.default = scripted
    bm25.reset()
    cache.clear()
    yield
    bm25.reset()


def sent_limits(gateway) -> list[int | None]:
    return [request.body.get("max_tokens") for request in gateway.requests]


def test_brain_answer_sends_the_answer_limit_and_the_reranker_its_num_predict(gateway, settings):
    do_ingest_note(
        title="Promoting a raw note",
        wing="guides",
        slug="promoting",
        source="test",
        body="A reviewer promotes a raw note from the review queue: open /review and press Promote.",
    )
    with FakeReranker(lambda prompt: "yes") as ollama:
        settings.BRAIN_RERANKER_URL = ollama.url
        result = answer("How do I promote a raw note?")
        reranker_bodies = [request["body"] for request in ollama.requests]
    assert result["synthesized"] is True
    assert sent_limits(gateway) == [LIMITS["ANSWER"]]
    assert reranker_bodies and all(body["options"]["num_predict"] == 4 for body in reranker_bodies)
    assert set(ModelCall.objects.values_list("purpose", "max_tokens")) == {("answer", 111), ("rerank", 4)}


def a_session(session_id: str) -> None:
    do_log_entry(session_id, kind="note", status="fail", message="tests flake: port in use")
    do_log_entry(session_id, kind="note", status="pass", message="pinned the port; tests pass")


def test_the_supervisor_retrospective_sends_the_retrospective_limit(gateway):
    a_session("s-bounded")
    assert run_retrospective("s-bounded").model_dump(mode="json")["method"] == "llm"
    assert sent_limits(gateway) == [LIMITS["RETROSPECTIVE"]]


def test_the_routed_retrospective_sends_the_retrospective_limit(gateway):
    a_session("s-routed")
    assert routed_retrospective_result(RetrospectiveInput(session_id="s-routed")).status == "pass"
    assert sent_limits(gateway) == [LIMITS["RETROSPECTIVE"]]


def test_a_routed_review_of_a_long_file_sends_the_review_limit_and_its_summaries_the_summary_limit(
    gateway, settings, tmp_path
):
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp_path)]
    settings.SUPERVISOR_TREE_SPLIT_CHARS = 1000  # app.py below is split: summaries first, then one call per part
    functions = "".join(f"def helper_{n}(x):\n    return x + {n}\n\n\n" for n in range(60))
    (tmp_path / "app.py").write_text(f"def add(a, b):\n    return a - b\n\n\n{functions}")

    routing_service.review(ReviewInput(project_root=str(tmp_path), paths=["app.py"]), lambda *a: None, lambda: False)

    by_kind = {
        (r.body["messages"][0]["content"].startswith("Summarise"), r.body["max_tokens"]) for r in gateway.requests
    }
    assert by_kind == {(True, LIMITS["SUMMARY"]), (False, LIMITS["REVIEW"])}


def test_a_routed_debug_sends_the_debug_limit(gateway, settings, tmp_path):
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp_path)]
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a - b\n")
    command = f"{sys.executable} -c \"import app; assert app.add(2, 2) == 4, 'app.py:2'\""

    routing_service.debug(
        DebugInput(project_root=str(tmp_path), symptom="add is wrong", failing_cmd=command),
        lambda *a: None,
        lambda: False,
    )

    assert sent_limits(gateway) == [LIMITS["DEBUG"]]


def test_every_recorded_generation_names_its_limit(gateway):
    a_session("s-all")
    run_retrospective("s-all").model_dump(mode="json")
    assert ModelCall.objects.exists() and not ModelCall.objects.filter(max_tokens__isnull=True).exists()
