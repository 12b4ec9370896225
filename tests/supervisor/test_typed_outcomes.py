"""Statuses, verdicts and outcomes are typed: enums and dataclasses, not loose strings and tuples."""

from __future__ import annotations

import ast
import inspect
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from supervisor import executor, routing_tools
from supervisor.models import Pathway, RoutingEntry, SkillRun
from supervisor.skills import STATUSES, Verdict, build_result, result_schema


def test_a_result_status_that_is_not_a_verdict_is_refused():
    with pytest.raises(ValueError, match="passed"):
        build_result("review", status="passed")


def test_a_result_is_built_with_its_verdict_and_neutral_values_for_the_rest():
    result = build_result("debug", status=Verdict.FAIL, message="still fails")

    assert result["status"] == "fail" and result["status"] is Verdict.FAIL
    assert set(result) == set(result_schema("debug")["required"])  # the optional usage fields come later
    assert (result["skill"], result["phase"], result["verified"], result["hypotheses"]) == ("debug", "debug", None, [])


def test_callers_see_every_verdict_but_cancelled_and_a_run_can_end_in_each():
    assert STATUSES == ["pass", "fail", "error", "timeout"]
    assert {verdict.value for verdict in Verdict} <= set(SkillRun.Status.values)
    assert set(SkillRun.Status.values) - set(Verdict) == {"queued", "running"}


def test_the_stored_status_values_are_the_ones_the_database_already_holds():
    assert SkillRun.Status.values == ["queued", "running", "pass", "fail", "error", "timeout", "cancelled"]
    assert RoutingEntry.Status.values == ["pass", "fail", "error", "outage"]
    assert RoutingEntry.Reason.values == [
        "override",
        "pathway",
        "floor",
        "ceil",
        "sample band",
        "min samples",
        "fail-open retry",
        "single model",
    ]
    assert Pathway.State.values == ["probation", "promoted", "retired"]


@pytest.mark.django_db
def test_the_choices_need_no_migration():
    out = StringIO()
    call_command("makemigrations", "supervisor", "--check", "--dry-run", stdout=out)  # SystemExit(1) if one is needed
    assert "No changes detected" in out.getvalue()


def test_a_process_run_to_its_end_is_an_exited_process_result(tmp_path):
    ran = executor.run_process(["/bin/sh", "-c", "echo hi; exit 0"], cwd=tmp_path, timeout=10)

    assert isinstance(ran, executor.ProcessResult)
    assert ran.outcome == executor.ProcessOutcome.EXITED and ran.succeeded and ran.stdout == "hi\n"


def test_a_process_killed_at_its_deadline_is_a_timeout_not_a_success(tmp_path):
    ran = executor.run_process(["/bin/sh", "-c", "sleep 30"], cwd=tmp_path, timeout=0.5)

    assert ran.outcome == executor.ProcessOutcome.TIMEOUT and not ran.succeeded


def test_the_routing_tools_module_only_declares_its_tools():
    """Each handler on /mcp/routing is one call into supervisor.routing_service; the logic lives there."""
    tree = ast.parse(Path(inspect.getfile(routing_tools)).read_text())
    handlers = [node for node in tree.body if isinstance(node, ast.FunctionDef)]

    assert {handler.name for handler in handlers} == {"review", "debug"}
    for handler in handlers:
        (statement,) = handler.body
        assert isinstance(statement, ast.Return) and isinstance(statement.value, ast.Call)
        assert ast.unparse(statement.value.func) == f"routing_service.{handler.name}"
