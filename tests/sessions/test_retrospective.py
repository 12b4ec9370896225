"""Retrospective: rules and LLM paths, merge suggestions, idempotency, the MCP tool."""

from __future__ import annotations

import pytest

from brain import bm25
from brain.actions import do_ingest_note
from brain.models import Note
from sessions.actions import do_log_entry
from sessions.errors import SessionNotFound
from sessions.models import RetrospectiveRun
from sessions.retrospective import run_retrospective
from tests.conftest import call_tool, mcp_post, rpc
from tests.fakes.openai import Reply

SESSION = "retro-7f3c"
DECISION = "Slugs stay ASCII: transliterate titles with unidecode before slugifying"


@pytest.fixture(autouse=True)
def bm25_only(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.LITELLM_BASE_URL = ""
    bm25.reset()
    yield
    bm25.reset()


def record_session(session_id: str = SESSION) -> None:
    do_log_entry(session_id, kind="start", project="hyperguild", client={"name": "claude-code"})
    do_log_entry(
        session_id,
        kind="skill",
        skill="tdd_green",
        phase="green",
        status="fail",
        message="ImportError: No module named 'unidecode'",
    )
    do_log_entry(session_id, kind="note", message="added unidecode==1.3.8 to requirements.txt")
    do_log_entry(session_id, kind="skill", skill="tdd_green", phase="green", status="pass", message="slug tests green")
    do_log_entry(session_id, kind="decision", message=DECISION)
    do_log_entry(session_id, kind="end", status="ok")


def retrospective_notes():
    return Note.objects.filter(source="retrospective").order_by("id")


@pytest.mark.django_db
def test_rules_write_a_raw_note_per_transition_and_decision_with_provenance():
    record_session()
    result = run_retrospective(SESSION).model_dump(mode="json")

    notes = list(retrospective_notes())
    assert result["status"] == "pass" and result["method"] == "rules" and result["count"] == 2
    assert [n.status for n in notes] == ["raw", "raw"]
    by_kind = {n.frontmatter["kind"]: n for n in notes}
    assert set(by_kind) == {"decision", "correction"}
    decision, correction = by_kind["decision"], by_kind["correction"]
    assert DECISION in decision.body and decision.session_id == SESSION
    assert decision.provenance["entries"] == [5] and decision.provenance["method"] == "rules"
    assert decision.provenance["session_id"] == SESSION and decision.provenance["source"] == "retrospective"
    assert correction.provenance["entries"] == [2, 3, 4]
    assert "unidecode" in correction.body and "tdd_green" in correction.title
    assert {item["outcome"] for item in result["learnings"]} == {"written"}
    assert RetrospectiveRun.objects.get().notes_written == sorted(result["written"], key=result["written"].index)


@pytest.mark.django_db
def test_a_second_run_on_the_same_session_writes_nothing():
    record_session()
    run_retrospective(SESSION).model_dump(mode="json")
    before = list(Note.objects.values_list("id", "content_hash"))
    again = run_retrospective(SESSION).model_dump(mode="json")
    assert list(Note.objects.values_list("id", "content_hash")) == before
    assert again["written"] == [] and {item["outcome"] for item in again["learnings"]} == {"exists"}
    assert RetrospectiveRun.objects.count() == 1


@pytest.mark.django_db
def test_a_learning_an_existing_wiki_note_already_states_becomes_a_merge_suggestion():
    wiki = do_ingest_note(
        title="Slug rules",
        body="Slugs stay ASCII. We transliterate titles with unidecode before slugifying them, so links never break.",
        wing="concepts",
    )
    record_session()
    result = run_retrospective(SESSION).model_dump(mode="json")

    decision = next(item for item in result["learnings"] if item["kind"] == "decision")
    assert decision["outcome"] == "merge" and decision["merge_into"]["slug"] == wiki.slug
    assert result["merge_suggestions"][0]["slug"] == wiki.slug
    assert [n.frontmatter["kind"] for n in retrospective_notes()] == ["correction"]


@pytest.mark.django_db
def test_failure_to_pass_in_the_sessions_skill_runs_is_found_too():
    from supervisor.models import SkillRun

    do_log_entry("runs-only", kind="start")
    SkillRun.objects.create(
        skill="tdd_green",
        status="fail",
        verified=False,
        session_id="runs-only",
        message="tests still fail: AssertionError in test_slug_unicode",
    )
    passed = SkillRun.objects.create(skill="tdd_green", status="pass", verified=True, session_id="runs-only")
    result = run_retrospective("runs-only").model_dump(mode="json")
    note = retrospective_notes().get()
    assert result["count"] == 1 and note.provenance["runs"][-1] == passed.pk
    assert "AssertionError" in note.body


@pytest.mark.django_db
def test_an_unknown_session_is_an_error_that_writes_nothing():
    with pytest.raises(SessionNotFound):
        run_retrospective("never-logged").model_dump(mode="json")
    assert not Note.objects.exists()


LLM_ANSWER = {
    "learnings": [
        {
            "title": "Pin transliteration dependencies when slugs depend on them",
            "body": "tdd_green failed until unidecode was added to requirements.txt.",
            "kind": "correction",
            "evidence": [2, 3, 4],
        },
        {"title": "Slugs are ASCII", "body": DECISION, "kind": "decision", "evidence": [5]},
    ]
}


@pytest.fixture
def gateway(gateway, settings):
    """The shared fake gateway (tests/fakes), with the model the retrospective asks."""
    settings.BRAIN_ANSWER_MODEL = "answer-model"
    return gateway


@pytest.mark.django_db
def test_with_an_llm_the_model_proposes_the_learnings_and_they_are_written(gateway):
    gateway.on("answer-model", lambda request: Reply.json(LLM_ANSWER))
    record_session()
    result = run_retrospective(SESSION).model_dump(mode="json")

    notes = list(retrospective_notes())
    assert result["method"] == "llm" and result["model_used"] == "answer-model" and len(notes) == 2
    assert {n.provenance["method"] for n in notes} == {"llm"}
    assert sorted(n.provenance["entries"] for n in notes) == [[2, 3, 4], [5]]
    assert notes[0].provenance["model"] == "answer-model"
    sent = gateway.requests[0].body
    assert sent["response_format"] == {"type": "json_object"}
    assert DECISION in sent["messages"][-1]["content"] and "#2 skill tdd_green" in sent["messages"][-1]["content"]
    assert run_retrospective(SESSION).model_dump(mode="json")["written"] == [] and retrospective_notes().count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    "reply",
    [
        Reply.text("Here are my thoughts: the session went well."),
        Reply.json({"learnings": [{"title": "x", "body": "y", "kind": "insight", "evidence": [1]}]}),
        Reply.json({"learnings": [{"title": "Cites nothing real", "body": "b", "kind": "pattern", "evidence": [99]}]}),
    ],
    ids=["not json", "wrong kind", "unknown evidence"],
)
def test_a_malformed_model_answer_is_reported_and_nothing_is_written(gateway, reply):
    gateway.on("answer-model", lambda request: reply)
    record_session()
    result = run_retrospective(SESSION).model_dump(mode="json")
    assert (
        result["status"] == "error" and "malformed" in result["message"] and "nothing was written" in result["message"]
    )
    assert result["learnings"] == [] and result["count"] == 0
    assert not Note.objects.exists()
    # No note, but a failed run that keeps the model's own text (and its ModelCall) to read and replay.
    run = RetrospectiveRun.objects.get()
    assert (run.status, run.notes_written) == ("malformed", [])
    assert run.model_output == reply.body["choices"][0]["message"]["content"]
    assert run.model_calls.get().outcome == "bad_output"


@pytest.mark.django_db
def test_a_model_the_gateway_refuses_falls_back_to_the_rules_and_says_so(gateway):
    record_session()
    result = run_retrospective(SESSION, llm_model="missing-model").model_dump(mode="json")
    assert result["method"] == "rules" and "used the rules instead" in result["message"]
    assert gateway.models_called() == ["missing-model"] and retrospective_notes().count() == 2
    # No model answered: the result and the record name the rules, not the model that was asked.
    assert result["model_used"] == "rules"
    assert RetrospectiveRun.objects.get().model == "" and RetrospectiveRun.objects.get().method == "rules"


SUPERVISOR_AUTH = {"Authorization": "Bearer sup-token"}


def test_the_retrospective_tool_on_the_supervisor_endpoint(transactional_db, asgi_server, settings):
    settings.SUPERVISOR_MCP_TOKEN = "sup-token"
    record_session("tool-session")
    url = f"{asgi_server}/mcp/supervisor"
    result = call_tool(url, "retrospective", {"session_id": "tool-session"}, SUPERVISOR_AUTH)
    unknown = call_tool(url, "retrospective", {"session_id": "nobody"}, SUPERVISOR_AUTH)
    refused = mcp_post(url, rpc("tools/call", {"name": "retrospective", "arguments": {"session_id": "tool-session"}}))

    assert not result.get("isError") and result["structuredContent"]["count"] == 2
    assert unknown["isError"] is True and "session_log" in unknown["content"][0]["text"]
    assert refused.status_code == 401
    assert retrospective_notes().count() == 2
