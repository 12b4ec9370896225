"""tdd_red / tdd_green / tdd_refactor on a real Python project, verified by the supervisor's own pytest run."""

from __future__ import annotations

import json

import pytest

from tests.fakes.helpers import run_skill_inline as run

pytestmark = pytest.mark.django_db

FAILING_TEST = "def test_add_sums_two_numbers():\n    from calc import add\n\n    assert add(2, 3) == 5\n"
PASSING_TEST = "def test_nothing_really():\n    assert 1 + 1 == 2\n"
IMPL = "def double(x):\n    return 2 * x\n\n\ndef add(a, b):\n    return a + b\n"
REFACTORED = "def double(x):\n    return x + x\n\n\ndef add(a, b):\n    total = a + b\n    return total\n"


def report(path="tests/test_add.py", summary="wrote the test", **extra):
    return {"status": "done", "file_path": path, "summary": summary, **extra}


def test_red_is_verified_because_the_supervisors_own_test_run_fails(fake_claude, python_project):
    fake_claude.script(
        [{"write": {"tests/test_add.py": FAILING_TEST}, "report": report(test_name="test_add_sums_two_numbers")}]
    )

    skill_run = run(
        "tdd_red", {"project_root": str(python_project), "spec": "add(a, b) returns the sum", "session_id": "s-1"}
    )

    result = skill_run.result
    assert result["status"] == "pass" and result["verified"] is True
    assert result["attempts"] == 1 and result["file_path"] == "tests/test_add.py"
    assert "failed" in result["runner_output"] and "test_add_sums_two_numbers" in result["runner_output"]
    assert result["files_changed"] == ["tests/test_add.py"]
    assert skill_run.status == "pass" and skill_run.verified is True and skill_run.session_id == "s-1"
    assert skill_run.worker_report["test_name"] == "test_add_sums_two_numbers"
    assert skill_run.stdout.startswith('{"type": "result"')
    (call,) = fake_claude.calls()
    argv = call["argv"]
    assert call["cwd"] == str(python_project)
    assert argv[argv.index("--output-format") + 1] == "json"
    assert json.loads(argv[argv.index("--json-schema") + 1])["required"] == ["status", "file_path", "summary"]
    assert argv[argv.index("--model") + 1] == "sonnet"
    # The prompt reaches claude on stdin, never in argv (argv is world-readable in `ps`).
    assert call["prompt_from"] == "stdin"
    assert "TDD red" in call["prompt"] and "Supervisor rules" in call["prompt"]
    assert not any("TDD red" in arg or "Supervisor rules" in arg for arg in argv)
    assert call["litellm"] == "http://127.0.0.1:9/litellm"


def test_a_worker_that_writes_a_passing_test_is_not_verified_and_retried_until_it_repeats_itself(
    fake_claude, python_project
):
    fake_claude.script([{"write": {"tests/test_add.py": PASSING_TEST}, "report": report(summary="it fails, trust me")}])

    skill_run = run("tdd_red", {"project_root": str(python_project), "spec": "add(a, b) returns the sum"})

    result = skill_run.result
    assert result["status"] == "fail" and result["verified"] is False
    assert result["attempts"] == 2  # identical outputs twice in a row: stopped before the third
    assert "same output twice" in result["message"] and "tests pass" in result["message"]
    assert len(fake_claude.calls()) == 2
    assert "Previous attempt rejected" in fake_claude.calls()[1]["prompt"]
    assert skill_run.worker_report["summary"] == "it fails, trust me"  # recorded, not believed
    assert [entry["verified"] for entry in skill_run.attempt_log] == [False, False]


def test_a_worker_that_claims_success_without_writing_anything_uses_every_attempt(fake_claude, python_project):
    fake_claude.script([{"report": report(summary=f"done, attempt {n}")} for n in range(1, 4)])

    skill_run = run("tdd_red", {"project_root": str(python_project), "spec": "add(a, b) returns the sum"})

    result = skill_run.result
    assert result["status"] == "fail" and result["verified"] is False and result["attempts"] == 3
    assert "not verified after 3 attempts" in result["message"] and "tests pass" in result["message"]
    assert len(fake_claude.calls()) == 3


def test_red_passes_on_a_retry_after_a_first_bad_attempt(fake_claude, python_project):
    fake_claude.script(
        [
            {"write": {"tests/test_add.py": PASSING_TEST}, "report": report(summary="first")},
            {"write": {"tests/test_add.py": FAILING_TEST}, "report": report(summary="second")},
        ]
    )

    result = run("tdd_red", {"project_root": str(python_project), "spec": "add"}).result

    assert result["status"] == "pass" and result["verified"] is True and result["attempts"] == 2


def test_green_then_refactor_end_to_end_on_the_same_project(fake_claude, python_project):
    (python_project / "tests" / "test_add.py").write_text(FAILING_TEST)

    fake_claude.script([{"write": {"calc.py": IMPL}, "report": report(path="calc.py", files_changed=["calc.py"])}])
    green = run(
        "tdd_green", {"project_root": str(python_project), "test_path": "tests/test_add.py", "impl_path": "calc.py"}
    ).result
    assert green["status"] == "pass" and green["verified"] is True and green["file_path"] == "calc.py"
    assert "passed" in green["runner_output"]

    (fake_claude.state / "count").unlink()
    fake_claude.script([{"write": {"calc.py": REFACTORED}, "report": report(path="calc.py")}])
    refactor = run(
        "tdd_refactor", {"project_root": str(python_project), "test_path": "tests/test_add.py", "impl_path": "calc.py"}
    ).result
    assert refactor["status"] == "pass" and refactor["verified"] is True
    assert (python_project / "calc.py").read_text() == REFACTORED


def test_green_is_not_verified_when_the_tests_still_fail(fake_claude, python_project):
    (python_project / "tests" / "test_add.py").write_text(FAILING_TEST)
    fake_claude.script([{"report": report(path="calc.py", summary="implemented add")}])

    result = run("tdd_green", {"project_root": str(python_project), "test_path": "tests/test_add.py"}).result

    assert result["status"] == "fail" and result["verified"] is False and result["attempts"] == 2
    assert "requires them to pass" in result["message"]


def test_refactor_that_breaks_behaviour_is_not_verified(fake_claude, python_project):
    fake_claude.script([{"write": {"calc.py": "def double(x):\n    return x\n"}, "report": report(path="calc.py")}])

    result = run(
        "tdd_refactor",
        {"project_root": str(python_project), "test_path": "tests/test_double.py", "impl_path": "calc.py"},
    ).result

    assert result["status"] == "fail" and result["verified"] is False


def test_an_explicit_test_cmd_is_used_instead_of_detection(fake_claude, python_project):
    fake_claude.script([{"write": {"tests/test_add.py": FAILING_TEST}, "report": report()}])

    result = run("tdd_red", {"project_root": str(python_project), "spec": "add", "test_cmd": "exit 0"}).result

    assert result["test_cmd"] == "exit 0" and result["verified"] is False


def test_a_worker_answer_that_breaks_the_schema_is_an_attempt_that_failed(fake_claude, python_project):
    fake_claude.script(
        [
            {"report": {"file_path": "x"}},
            {"garbage": True},
            {"in_result": True, "write": {"tests/test_add.py": FAILING_TEST}, "report": report()},
        ]
    )

    skill_run = run("tdd_red", {"project_root": str(python_project), "spec": "add"})

    assert skill_run.result["status"] == "pass" and skill_run.result["attempts"] == 3
    assert "does not match the schema" in skill_run.attempt_log[0]["worker_message"]
    assert "without printing the JSON result" in skill_run.attempt_log[1]["worker_message"]


def test_red_refuses_a_suite_that_already_fails_and_starts_no_worker(fake_claude, python_project):
    (python_project / "tests" / "test_broken.py").write_text("def test_already_broken():\n    assert False\n")
    fake_claude.script([{"write": {"tests/test_add.py": FAILING_TEST}, "report": report()}])

    result = run("tdd_red", {"project_root": str(python_project), "spec": "add(a, b) returns the sum"}).result

    assert result["status"] == "fail" and result["verified"] is False and result["attempts"] == 0
    assert "already fails before any change" in result["message"]
    assert "test_already_broken" in result["runner_output"]
    assert fake_claude.calls() == []
    assert not (python_project / "tests" / "test_add.py").exists()


def test_red_may_start_from_a_project_with_no_tests_yet(fake_claude, python_project):
    (python_project / "tests" / "test_double.py").unlink()
    fake_claude.script([{"write": {"tests/test_add.py": FAILING_TEST}, "report": report()}])

    result = run("tdd_red", {"project_root": str(python_project), "spec": "add(a, b) returns the sum"}).result

    assert result["status"] == "pass" and result["verified"] is True


def test_refactor_refuses_a_suite_that_already_fails(fake_claude, python_project):
    (python_project / "tests" / "test_add.py").write_text(FAILING_TEST)
    fake_claude.script([{"write": {"calc.py": REFACTORED}, "report": report(path="calc.py")}])

    result = run(
        "tdd_refactor", {"project_root": str(python_project), "test_path": "tests/test_add.py", "impl_path": "calc.py"}
    ).result

    assert result["status"] == "fail" and result["attempts"] == 0
    assert "refactor starts from a passing suite" in result["message"]
    assert fake_claude.calls() == []
