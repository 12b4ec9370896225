"""The executor stops hanging workers with their whole process group."""

from __future__ import annotations

import time

import pytest

from supervisor import executor
from supervisor.tasks import run_skill
from supervisor.tools import start_skill_run
from tests.supervisor.conftest import process_alive

pytestmark = pytest.mark.django_db


def wait_for_pids(fake_claude, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = fake_claude.pids()
        if len(pids) == count:
            return pids
        time.sleep(0.05)
    raise AssertionError("the fake worker did not start its children")


def test_a_hanging_worker_and_its_children_are_killed_at_the_deadline(fake_claude, python_project, settings):
    settings.SUPERVISOR_TIMEOUT = 2
    fake_claude.script([{"hang": True, "children": 3}])

    started = time.monotonic()
    skill_run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add"})
    run_skill(skill_run.pk)
    elapsed = time.monotonic() - started
    skill_run.refresh_from_db()

    assert skill_run.status == "timeout" and skill_run.result["status"] == "timeout"
    assert "SUPERVISOR_TIMEOUT (2 s)" in skill_run.message
    pids = fake_claude.pids()
    assert len(pids) == 4
    assert not [pid for pid in pids if process_alive(pid)]
    print(f"hang killed after {elapsed:.1f} s (deadline 2 s + 5 s grace)")


def test_children_that_ignore_sigterm_get_sigkill_after_the_grace_period(fake_claude, python_project, settings):
    settings.SUPERVISOR_TIMEOUT = 1
    fake_claude.script([{"hang": True, "children": 2, "ignore_term": True}])

    skill_run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add"})
    run_skill(skill_run.pk)
    skill_run.refresh_from_db()

    assert skill_run.status == "timeout"
    assert not [pid for pid in fake_claude.pids() if process_alive(pid)]


def test_a_silent_worker_is_stopped_by_the_idle_watchdog(fake_claude, python_project, settings):
    settings.SUPERVISOR_IDLE_TIMEOUT = 1
    fake_claude.script([{"hang": True, "children": 1}])

    skill_run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add"})
    run_skill(skill_run.pk)
    skill_run.refresh_from_db()

    assert skill_run.status == "timeout" and "printed nothing" in skill_run.message
    assert not [pid for pid in fake_claude.pids() if process_alive(pid)]


def test_a_cancel_request_kills_the_worker_group(fake_claude, python_project, tmp_path):
    fake_claude.script([{"hang": True, "children": 2}])
    flag = {"cancel": False}

    def cancel_check() -> bool:
        if fake_claude.pids():
            flag["cancel"] = True
        return flag["cancel"]

    result = executor.run_worker(
        prompt="x",
        schema={"type": "object"},
        cwd=python_project,
        model=None,
        allowed_tools="Read",
        cancel_check=cancel_check,
    )

    assert result.status == "cancelled"
    assert not [pid for pid in fake_claude.pids() if process_alive(pid)]


def test_no_slot_free_within_the_queue_wait_is_a_clear_error(fake_claude, python_project, settings):
    from django.db import connections

    settings.SUPERVISOR_MAX_WORKERS = 1
    settings.SUPERVISOR_QUEUE_WAIT = 1
    other = connections.create_connection("default")  # another process holding the only slot
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, 1)", [executor.SLOT_LOCK_NAMESPACE])
        result = executor.run_worker(
            prompt="x", schema={"type": "object"}, cwd=python_project, model=None, allowed_tools="Read"
        )
    finally:
        other.close()

    assert result.status == "error" and "worker slots stayed busy" in result.message
    assert fake_claude.calls() == []


def test_a_missing_binary_is_an_error_that_says_what_to_set(fake_claude, python_project, settings):
    settings.CLAUDE_BINARY = "/nonexistent/claude"

    result = executor.run_worker(
        prompt="x", schema={"type": "object"}, cwd=python_project, model=None, allowed_tools="Read"
    )

    assert result.status == "error" and "CLAUDE_BINARY" in result.message


def test_output_is_capped_keeping_head_and_tail(settings):
    settings.SUPERVISOR_OUTPUT_CAP = 1024
    text = "A" * 3000 + "THE END"

    capped = executor.cap(text)

    assert len(capped) <= 1024 and capped.endswith("THE END") and "characters cut" in capped


def test_merged_stderr_arrives_in_stdout_in_the_order_it_was_written(tmp_path):
    ran = executor.run_process(
        ["/bin/sh", "-c", "echo one; echo two >&2; echo three; exit 3"], cwd=tmp_path, timeout=10, merge_stderr=True
    )

    assert (ran.outcome, ran.exit_code) == (executor.ProcessOutcome.EXITED, 3)
    assert ran.stdout == "one\ntwo\nthree\n" and ran.stderr == ""
