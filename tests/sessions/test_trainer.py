"""Trainer: SFT/DPO candidates from verified runs, secret redaction, curation and TRL export."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from jsonschema import Draft202012Validator

from sessions.actions import (
    FlaggedExample,
    InvalidExampleEdit,
    do_approve_example,
    do_edit_example,
    do_reject_example,
    do_swap_dpo,
)
from sessions.models import TrainingExample
from sessions.trainer import run_trainer
from sessions.trl_export import export_training_data_dir
from supervisor.models import RoutingEntry, SkillRun
from tests.conftest import call_tool

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
SESSION = "train-1"

# TRL's conversational formats, written out here independently of the code under test.
TRL_MESSAGE = {
    "type": "object",
    "required": ["role", "content"],
    "additionalProperties": False,
    "properties": {"role": {"enum": ["system", "user", "assistant"]}, "content": {"type": "string", "minLength": 1}},
}
TRL_SFT = Draft202012Validator(
    {
        "type": "object",
        "required": ["messages"],
        "additionalProperties": False,
        "properties": {"messages": {"type": "array", "minItems": 2, "items": TRL_MESSAGE}},
    }
)
TRL_DPO = Draft202012Validator(
    {
        "type": "object",
        "required": ["prompt", "chosen", "rejected"],
        "additionalProperties": False,
        "properties": {
            k: {"type": "array", "minItems": 1, "items": TRL_MESSAGE} for k in ("prompt", "chosen", "rejected")
        },
    }
)


def fail_then_pass(session_id: str = SESSION) -> tuple[SkillRun, SkillRun]:
    arguments = {
        "project_root": "/srv/app",
        "test_path": "tests/test_deploy.py",
        "description": f"make deploy read credentials from env, not the hard-coded {AWS_KEY}",
        "session_id": session_id,
    }
    failed = SkillRun.objects.create(
        skill="tdd_green",
        tool="tdd_green",
        arguments={**arguments, "model": "fast"},
        project_root="/srv/app",
        model="fast",
        status="fail",
        verified=False,
        session_id=session_id,
        attempts=1,
        worker_report={"status": "done", "file_path": "deploy.py", "summary": "left the key in place"},
        runner_output="FAILED tests/test_deploy.py::test_reads_env",
        exit_code=1,
        message="not verified: tests still fail",
    )
    passed = SkillRun.objects.create(
        skill="tdd_green",
        tool="tdd_green",
        arguments={**arguments, "model": "thinking"},
        project_root="/srv/app",
        model="thinking",
        status="pass",
        verified=True,
        session_id=session_id,
        attempts=1,
        worker_report={"status": "done", "file_path": "deploy.py", "summary": "reads AWS_ACCESS_KEY_ID from env"},
        runner_output="1 passed",
        exit_code=0,
        message="tests pass",
    )
    return failed, passed


@pytest.fixture
def reviewer(db):
    return get_user_model().objects.create_user("curator", password="x" * 12)


@pytest.mark.django_db
def test_a_fail_then_pass_pair_yields_one_sft_and_one_dpo_candidate():
    failed, passed = fail_then_pass()
    result = run_trainer(SESSION)

    sft = TrainingExample.objects.get(kind="sft")
    dpo = TrainingExample.objects.get(kind="dpo")
    assert result.count == 2 and result.created == 2
    assert sft.status == dpo.status == "candidate"
    assert sft.prompt[0]["role"] == "system" and sft.prompt[-1]["role"] == "user"
    assert "reads AWS_ACCESS_KEY_ID from env" in sft.completion[0]["content"]
    assert "reads AWS_ACCESS_KEY_ID" in dpo.chosen[0]["content"] and "left the key" in dpo.rejected[0]["content"]
    assert dpo.provenance["runs"] == [failed.pk, passed.pk] and dpo.provenance["models"] == ["fast", "thinking"]
    assert dpo.provenance["verification"]["rejected"]["verified"] is False
    assert sft.provenance["session_id"] == SESSION and sft.provenance["verification"]["exit_code"] == 0


@pytest.mark.django_db
def test_an_aws_key_in_the_prompt_is_redacted_and_the_example_flagged():
    fail_then_pass()
    run_trainer(SESSION)
    for example in TrainingExample.objects.all():
        stored = json.dumps([example.prompt, example.completion, example.chosen, example.rejected, example.provenance])
        assert AWS_KEY not in stored and "[REDACTED:aws_access_key]" in example.prompt[-1]["content"]
        assert example.flagged and {"field": "prompt", "pattern": "aws_access_key", "count": 1} in example.flags


@pytest.mark.django_db
def test_extracting_twice_stores_nothing_new():
    fail_then_pass()
    run_trainer(SESSION)
    before = list(TrainingExample.objects.values_list("id", "updated_at"))
    again = run_trainer(SESSION)
    assert again.created == 0 and again.count == 2
    assert list(TrainingExample.objects.values_list("id", "updated_at")) == before


@pytest.mark.django_db
def test_unverified_or_failing_runs_alone_give_nothing():
    SkillRun.objects.create(skill="review", status="pass", verified=None, session_id="s", worker_report={"a": 1})
    SkillRun.objects.create(skill="tdd_green", status="fail", verified=False, session_id="s", worker_report={"a": 2})
    assert run_trainer("s").count == 0 and not TrainingExample.objects.exists()


@pytest.mark.django_db
def test_a_run_whose_first_attempt_was_rejected_gives_a_dpo_pair_from_its_attempts():
    SkillRun.objects.create(
        skill="tdd_refactor",
        status="pass",
        verified=True,
        session_id="s2",
        worker_report={"summary": "second"},
        attempt_log=[
            {"attempt": 1, "report": {"summary": "first"}, "verified": False, "reason": "tests broke"},
            {"attempt": 2, "report": {"summary": "second"}, "verified": True, "reason": "tests pass"},
        ],
    )
    run_trainer("s2")
    dpo = TrainingExample.objects.get(kind="dpo")
    assert dpo.provenance["origin"] == "attempts"
    assert '"first"' in dpo.rejected[0]["content"] and '"second"' in dpo.chosen[0]["content"]


@pytest.mark.django_db
def test_a_routed_call_where_one_model_failed_its_check_and_the_other_passed_gives_a_dpo_pair():
    request = {"messages": [{"role": "system", "content": "review"}, {"role": "user", "content": "review diff"}]}
    fast = RoutingEntry.objects.create(
        skill="review",
        model="fast",
        reason="floor",
        status="fail",
        is_final=False,
        request=request,
        response='{"findings": []}',
        session_id="r1",
        error="finding quotes no real line",
    )
    RoutingEntry.objects.create(
        skill="review",
        model="thinking",
        reason="fail-open retry",
        status="pass",
        attempt_of=fast,
        request=request,
        response='{"findings": [1]}',
        session_id="r1",
    )
    run_trainer("r1")
    dpo = TrainingExample.objects.get()
    assert dpo.kind == "dpo" and dpo.provenance["origin"] == "routing"
    assert dpo.prompt == request["messages"] and dpo.rejected[0]["content"] == '{"findings": []}'


@pytest.mark.django_db
def test_curation_actions_keep_a_history(reviewer):
    fail_then_pass()
    run_trainer(SESSION)
    dpo = TrainingExample.objects.get(kind="dpo")
    sft = TrainingExample.objects.get(kind="sft")
    original = dpo.chosen

    dpo = do_swap_dpo(dpo, reviewer=reviewer)
    assert dpo.rejected == original
    sft = do_edit_example(sft, reviewer=reviewer, completion=[{"role": "assistant", "content": "better"}])
    assert sft.flagged  # its prompt held an AWS key (redacted): approving it needs the reviewer's confirmation
    with pytest.raises(FlaggedExample):
        do_approve_example(sft, reviewer=reviewer)
    sft = do_approve_example(sft, reviewer=reviewer, confirm_flagged=True)
    dpo = do_reject_example(dpo, reviewer=reviewer, reason="pair is ambiguous")

    assert [e["action"] for e in sft.edits] == ["edit", "approve"] and sft.edits[0]["by"] == "curator"
    assert sft.edits[0]["changes"]["completion"]["after"] == [{"role": "assistant", "content": "better"}]
    assert (sft.status, dpo.status, dpo.review_note) == ("approved", "rejected", "pair is ambiguous")
    assert sft.reviewer == reviewer and sft.reviewed_at is not None


@pytest.mark.django_db
def test_an_edit_that_breaks_the_message_shape_is_refused_and_changes_nothing(reviewer):
    fail_then_pass()
    run_trainer(SESSION)
    sft = TrainingExample.objects.get(kind="sft")
    for bad in (
        {"completion": "plain text"},
        {"completion": [{"role": "robot", "content": "x"}]},
        {"chosen": []},
        {"status": "approved"},
    ):
        with pytest.raises(InvalidExampleEdit):
            do_edit_example(sft, reviewer=reviewer, **bad)
    sft.refresh_from_db()
    assert sft.edits == [] and sft.status == "candidate"
    with pytest.raises(InvalidExampleEdit):
        do_swap_dpo(sft, reviewer=reviewer)


@pytest.mark.django_db
def test_exported_jsonl_validates_against_the_trl_shapes(tmp_path, reviewer):
    fail_then_pass()
    run_trainer(SESSION)
    for example in TrainingExample.objects.all():
        do_approve_example(example, reviewer=reviewer, confirm_flagged=True)  # the fixture holds a redacted key
    SkillRun.objects.create(skill="debug", status="pass", verified=True, session_id="other", worker_report={"x": 1})
    run_trainer("other")  # a candidate: not approved, so not exported

    out = StringIO()
    call_command("trainer_export", str(tmp_path / "sft.jsonl"), kind="sft", stdout=out)
    call_command("trainer_export", str(tmp_path / "dpo.jsonl"), "--kind", "dpo", "--status", "approved", stdout=out)

    sft_lines = (tmp_path / "sft.jsonl").read_text().splitlines()
    dpo_lines = (tmp_path / "dpo.jsonl").read_text().splitlines()
    assert len(sft_lines) == 1 and len(dpo_lines) == 1
    for line in sft_lines:
        record = json.loads(line)
        assert not list(TRL_SFT.iter_errors(record)) and record["messages"][-1]["role"] == "assistant"
    for line in dpo_lines:
        record = json.loads(line)
        assert not list(TRL_DPO.iter_errors(record)) and record["prompt"][-1]["role"] == "user"
        assert record["chosen"][0]["role"] == record["rejected"][0]["role"] == "assistant"
    assert "Wrote 1 approved sft example(s)" in out.getvalue()


@pytest.mark.django_db
def test_a_record_that_does_not_fit_trl_is_left_out_and_the_export_fails_loudly(tmp_path):
    TrainingExample.objects.create(
        kind="sft", source_key="broken", status="approved", prompt=[{"role": "user", "content": "q"}], completion=[]
    )
    with pytest.raises(CommandError, match="do not fit TRL"):
        call_command("trainer_export", str(tmp_path / "sft.jsonl"), kind="sft", stdout=StringIO(), stderr=StringIO())
    assert (tmp_path / "sft.jsonl").read_text() == ""


@pytest.mark.django_db
def test_brain_export_gets_training_data_files_of_approved_examples(tmp_path, reviewer):
    fail_then_pass()
    run_trainer(SESSION)
    do_approve_example(TrainingExample.objects.get(kind="dpo"), reviewer=reviewer, confirm_flagged=True)
    summary = export_training_data_dir(tmp_path / "training-data")
    assert summary["sft"]["written"] == 0 and summary["dpo"]["written"] == 1
    assert sorted(p.name for p in (tmp_path / "training-data").iterdir()) == ["dpo.jsonl", "sft.jsonl"]


@pytest.mark.django_db
def test_trainer_extract_command_reports_what_it_found():
    fail_then_pass()
    out, err = StringIO(), StringIO()
    call_command("trainer_extract", "--session", SESSION, stdout=out, stderr=err)
    assert "2 new candidate(s) (1 SFT, 1 DPO)" in out.getvalue() and "flagged" in err.getvalue()


def test_the_trainer_tool_on_the_supervisor_endpoint(transactional_db, asgi_server, settings):
    settings.SUPERVISOR_MCP_TOKEN = "sup-token"
    fail_then_pass()
    url = f"{asgi_server}/mcp/supervisor"
    auth = {"Authorization": "Bearer sup-token"}
    bad = call_tool(url, "trainer", {"session_id": SESSION, "extra": 1}, auth)
    assert bad["isError"] is True and not TrainingExample.objects.exists()
    result = call_tool(url, "trainer", {"session_id": SESSION}, auth)
    assert not result.get("isError") and result["structuredContent"]["count"] == 2
    kinds = sorted(e["kind"] for e in result["structuredContent"]["examples"])
    assert kinds == ["dpo", "sft"] and TrainingExample.objects.count() == 2
