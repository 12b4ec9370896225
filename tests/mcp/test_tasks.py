"""The MCP Tasks extension on the engine's self-test endpoint (hyperguild.mcp.mcp_tasks).

The endpoint's long tools run as jobs (supervisor.jobs: a SkillRun each, run
by the `skill_worker` thread), as the service's endpoints run theirs.
tests/supervisor/test_tasks_across_replicas.py runs a real tdd_red as a task
across two server processes.
"""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from hyperguild.mcp.mcp_tasks import new_task_id, owner_digest
from supervisor import reaper
from supervisor.actions import do_create_skill_run
from supervisor.models import SkillRun
from tests.conftest import mcp_post, rpc
from tests.mcp.test_revisions import envelope, modern_headers

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def post(url, method, params, *, capabilities=None, name=None, headers=None):
    body = {**params, "_meta": envelope(capabilities)}
    return mcp_post(url, rpc(method, body), {**modern_headers(method, name), **(headers or {})})


def poll(url, task_id, *, until=("completed", "failed", "cancelled"), seconds=20.0, headers=None) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        response = post(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS, name=task_id, headers=headers)
        assert response.status_code == 200, response.text
        task = response.json()["result"]
        if task["status"] in until or time.monotonic() > deadline:
            return task
        time.sleep(0.1)


def test_a_long_tool_runs_as_a_task_whose_result_is_the_blocking_result(selftest_endpoint):
    _, _, url = selftest_endpoint
    call = {"name": "progress", "arguments": {"steps": 3}}
    blocking = post(url, "tools/call", call, name="progress").json()["result"]
    assert blocking["resultType"] == "complete"

    created = post(url, "tools/call", call, capabilities=TASKS, name="progress")
    assert created.status_code == 200, created.text
    handle = created.json()["result"]
    assert handle["resultType"] == "task"
    assert handle["status"] == "working"
    assert handle["ttlMs"] == 24 * 3600 * 1000 and handle["pollIntervalMs"] > 0
    assert handle["createdAt"].endswith("Z")

    task = poll(url, handle["taskId"])
    assert task["resultType"] == "complete"
    assert task["status"] == "completed"
    assert task["result"] == blocking


def test_a_short_tool_answers_at_once_even_when_the_client_could_poll(selftest_endpoint):
    _, _, url = selftest_endpoint
    result = post(url, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, capabilities=TASKS, name="echo")
    assert result.json()["result"]["resultType"] == "complete"
    assert not SkillRun.objects.exists()


def test_an_unknown_tool_is_refused_and_no_task_is_written(selftest_endpoint):
    _, _, url = selftest_endpoint
    response = post(url, "tools/call", {"name": "nope", "arguments": {}}, capabilities=TASKS, name="nope")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602
    assert not SkillRun.objects.exists()


def test_tasks_methods_need_the_extension(selftest_endpoint):
    _, _, url = selftest_endpoint
    response = post(url, "tasks/get", {"taskId": "whatever"}, name="whatever")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


def test_an_unknown_task_is_invalid_params(selftest_endpoint):
    _, _, url = selftest_endpoint
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):
        response = post(url, method, {"taskId": "no-such-task"}, capabilities=TASKS, name="no-such-task")
        assert response.status_code == 400, (method, response.text)
        assert response.json()["error"]["code"] == -32602


def test_another_callers_task_cannot_be_read_or_cancelled(selftest_endpoint, settings):
    _, state, url = selftest_endpoint
    settings.BRAIN_MCP_TOKEN = "team-token"  # the selftest endpoint uses the brain token
    mine = {"Authorization": "Bearer team-token"}
    handle = post(
        url,
        "tools/call",
        {"name": "wait_for_cancel", "arguments": {}},
        capabilities=TASKS,
        name="wait_for_cancel",
        headers=mine,
    ).json()["result"]
    assert state.started.wait(10)
    settings.BRAIN_MCP_TOKEN = "rotated-token"  # another credential, as a second person would hold
    theirs = {"Authorization": "Bearer rotated-token"}
    response = post(
        url, "tasks/cancel", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"], headers=theirs
    )
    assert response.json()["error"]["code"] == -32602
    assert not state.cancel_seen.wait(2.5)
    settings.BRAIN_MCP_TOKEN = "team-token"
    post(url, "tasks/cancel", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"], headers=mine)
    assert state.cancel_seen.wait(10)


def test_tasks_cancel_stops_the_call_and_the_task_ends_cancelled(selftest_endpoint):
    _, state, url = selftest_endpoint
    handle = post(
        url, "tools/call", {"name": "wait_for_cancel", "arguments": {}}, capabilities=TASKS, name="wait_for_cancel"
    ).json()["result"]
    assert state.started.wait(10)
    response = post(url, "tasks/cancel", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"])
    assert response.status_code == 200
    assert response.json()["result"]["resultType"] == "complete"
    assert state.cancel_seen.wait(10)  # through the run's notification to its worker, as from another replica
    assert poll(url, handle["taskId"])["status"] == "cancelled"
    again = post(url, "tasks/cancel", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"])
    assert again.status_code == 200  # cancelling an ended task is acknowledged, and changes nothing


def test_a_mismatched_mcp_name_on_tasks_get_is_a_header_mismatch(selftest_endpoint):
    _, _, url = selftest_endpoint
    response = post(url, "tasks/get", {"taskId": "abc"}, capabilities=TASKS, name="something-else")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_expired_tasks_are_unknown(selftest_endpoint):
    _, _, url = selftest_endpoint
    handle = post(
        url, "tools/call", {"name": "progress", "arguments": {"steps": 1}}, capabilities=TASKS, name="progress"
    ).json()["result"]
    assert poll(url, handle["taskId"])["status"] == "completed"
    SkillRun.objects.filter(task_id=handle["taskId"]).update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    response = post(url, "tasks/get", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"])
    assert response.json()["error"]["code"] == -32602
    assert SkillRun.objects.filter(task_id=handle["taskId"]).exists()  # the run stays in the history


def test_a_task_is_its_run_and_no_thread_of_the_web_process_runs_it(selftest_endpoint):
    """One job model (issue 49): the task's handle names a SkillRun, run by the worker (a thread named for the
    run here), with its progress on the run; the engine keeps no task row and starts no thread of its own."""
    _, state, url = selftest_endpoint
    handle = post(
        url, "tools/call", {"name": "wait_for_cancel", "arguments": {}}, capabilities=TASKS, name="wait_for_cancel"
    ).json()["result"]
    assert state.started.wait(10)
    run = SkillRun.objects.get(task_id=handle["taskId"])
    assert (run.endpoint, run.tool, run.status) == ("selftest", "wait_for_cancel", SkillRun.Status.RUNNING)
    assert not [thread.name for thread in threading.enumerate() if thread.name.startswith("mcp-task-")]
    deadline = time.monotonic() + 10
    while (task := poll(url, handle["taskId"], until=("working",)))["statusMessage"] != "wait_for_cancel: waiting":
        assert time.monotonic() < deadline, task  # the handler's progress line, read from the run
        time.sleep(0.1)
    post(url, "tasks/cancel", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"])
    assert state.cancel_seen.wait(10)  # told through the run's notification, in the worker


def test_a_task_whose_worker_died_is_answered_with_the_reapers_end(selftest_endpoint):
    """The run's worker process is gone (kill -9 of a django-q2 worker): the next tasks/get reaps the run."""
    _, _, url = selftest_endpoint
    dead = subprocess.Popen(["true"])
    dead.wait()
    run = do_create_skill_run(
        skill="wait_for_cancel",
        tool="wait_for_cancel",
        endpoint="selftest",
        arguments={},
        task_id=new_task_id(),
        task_owner=owner_digest(""),
        status=SkillRun.Status.RUNNING,
    )
    SkillRun.objects.filter(pk=run.pk).update(worker_host=reaper.HOST, worker_pid=dead.pid, started_at=timezone.now())
    answer = poll(url, run.task_id)
    assert answer["status"] == "completed", answer
    assert answer["result"]["isError"] is True and "abandoned" in answer["result"]["content"][0]["text"]
    assert SkillRun.objects.get(pk=run.pk).status == SkillRun.Status.ERROR


def test_a_long_tool_of_an_endpoint_without_jobs_answers_as_a_blocking_call(selftest_endpoint):
    endpoint, _, url = selftest_endpoint
    endpoint.jobs = None
    response = post(
        url, "tools/call", {"name": "progress", "arguments": {"steps": 2}}, capabilities=TASKS, name="progress"
    )
    result = response.json()["result"]
    assert result["resultType"] == "complete" and result["structuredContent"] == {"done": 2}
    assert not SkillRun.objects.exists()
