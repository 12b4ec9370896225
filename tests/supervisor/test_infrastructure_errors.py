"""A worker that cannot work at all (not logged in, rate-limited, offline) is not an attempt: the run ends at once."""

from __future__ import annotations

import pytest

from supervisor.executor import infrastructure_problem
from tests.fakes.helpers import run_skill_inline as run

pytestmark = pytest.mark.django_db

NOT_LOGGED_IN = {"type": "result", "is_error": True, "result": "Not logged in · Please run /login"}


def test_a_tdd_call_with_no_login_ends_as_error_in_one_attempt_quoting_the_cli(fake_claude, python_project, settings):
    settings.SUPERVISOR_MAX_ATTEMPTS = 3
    fake_claude.script([{"envelope": NOT_LOGGED_IN, "exit": 1}])

    skill_run = run("tdd_green", {"project_root": str(python_project), "test_path": "tests/test_double.py"})

    assert skill_run.status == "error" and skill_run.result["status"] == "error"
    assert skill_run.result["attempts"] == 1 and len(fake_claude.calls()) == 1
    assert "Not logged in · Please run /login" in skill_run.result["message"]
    assert "not logged in" in skill_run.result["message"]


def test_a_review_that_is_rate_limited_ends_as_error_with_the_cli_message(fake_claude, python_project):
    fake_claude.script(
        [{"envelope": {"type": "result", "is_error": True, "result": "API Error: 429 rate_limit_error"}}]
    )

    skill_run = run("review", {"project_root": str(python_project), "paths": ["calc.py"]})

    assert skill_run.status == "error" and "429 rate_limit_error" in skill_run.result["message"]
    assert len(fake_claude.calls()) == 1


def test_a_bad_answer_is_still_retried(fake_claude, python_project, settings):
    settings.SUPERVISOR_MAX_ATTEMPTS = 2
    fake_claude.script(
        [
            {"envelope": {"type": "result", "is_error": True, "result": "I could not decide"}, "exit": 1},
            {"garbage": True},
        ]
    )

    skill_run = run("tdd_green", {"project_root": str(python_project), "test_path": "tests/test_double.py"})

    assert skill_run.result["attempts"] == 2 and len(fake_claude.calls()) == 2
    assert skill_run.status == "fail"


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Not logged in · Please run /login", "not logged in"),
        ("Invalid API key · Please run /login", "not logged in"),
        ("Claude AI usage limit reached|1700000000", "rate-limited"),
        ("API Error: Connection error. (ECONNREFUSED)", "cannot reach its API"),
        ("the test still fails", None),
    ],
)
def test_infrastructure_messages_are_told_apart_from_bad_answers(text, label):
    assert infrastructure_problem(text) == label
