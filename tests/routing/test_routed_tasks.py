"""The routed skills and the sessions skills started as MCP tasks: each one a SkillRun run by the worker (issue 49).

The worker is the `skill_worker` thread (the real `supervisor.tasks.run_tool_job`); the gateway a fake
OpenAI-wire server on 127.0.0.1. tests/core/test_two_replicas.py kills the replica that started such a task.
"""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import call_command

from supervisor.models import RoutingEntry, SkillRun
from tests.fakes.openai import Reply
from tests.mcp.test_tasks import TASKS, post
from tests.people.conftest import make_person
from tests.routing.conftest import AUTH, FAST, GOOD_REVIEW, THINKING, seed_history
from tests.routing.test_session_skills import LEARNINGS, a_session

pytestmark = pytest.mark.django_db(transaction=True)


def finished(url: str, task_id: str, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        response = post(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS, name=task_id, headers=AUTH)
        assert response.status_code == 200, response.text
        task = response.json()["result"]
        if task["status"] != "working":
            return task
        assert time.monotonic() < deadline, task
        time.sleep(0.1)


def start(url: str, tool: str, arguments: dict) -> dict:
    response = post(
        url, "tools/call", {"name": tool, "arguments": arguments}, capabilities=TASKS, name=tool, headers=AUTH
    )
    assert response.status_code == 200, response.text
    handle = response.json()["result"]
    assert handle["resultType"] == "task" and handle["status"] == "working", handle
    return handle


def test_a_routed_review_task_is_a_skill_run_whose_result_is_the_review(gateway, project, asgi_server, skill_worker):
    seed_history("review", 0.95)
    gateway.on(FAST, lambda request: Reply.json(GOOD_REVIEW, delay=0.5))
    url = f"{asgi_server}/mcp/routing"

    handle = start(url, "review", {"project_root": str(project), "paths": ["app.py"]})
    task = finished(url, handle["taskId"])

    assert task["status"] == "completed", task
    result = task["result"]
    assert result["resultType"] == "complete" and result["isError"] is False, result
    review = result["structuredContent"]
    assert (review["status"], review["model_used"]) == ("pass", FAST)
    assert [finding["title"] for finding in review["findings"]] == ["add subtracts"]
    assert review["usage"]["calls"] == 1  # the worker's model call, linked to the run
    run = SkillRun.objects.get(task_id=handle["taskId"])
    assert (run.endpoint, run.tool, run.status) == ("routing", "review", SkillRun.Status.PASS)
    assert run.result["summary"] == review["summary"] and run.model_calls.count() == 1
    assert RoutingEntry.objects.filter(is_final=True).latest("id").model == FAST  # after the seeded history


def test_a_routed_retrospective_task_answers_as_the_blocking_call(gateway, asgi_server, skill_worker):
    seed_history("retrospective", 0.95)
    a_session("retro-task")
    gateway.on(FAST, lambda request: Reply.json(LEARNINGS))
    gateway.on(THINKING, lambda request: Reply.json(LEARNINGS))
    url = f"{asgi_server}/mcp/routing"

    task = finished(url, start(url, "retrospective", {"session_id": "retro-task"})["taskId"])

    assert task["status"] == "completed" and task["result"]["isError"] is False, task
    content = task["result"]["structuredContent"]
    assert (content["status"], content["count"]) == ("pass", 1)
    assert content["learnings"][0]["title"] == "Pin the embedded PostgreSQL port"


def test_a_refused_routed_task_completes_with_the_blocking_calls_error(gateway, asgi_server, skill_worker):
    """The handler's refusal (no such session), run in the worker, is the task's isError result; nothing asked."""
    url = f"{asgi_server}/mcp/routing"

    task = finished(url, start(url, "retrospective", {"session_id": "nobody"})["taskId"])

    assert task["status"] == "completed", task
    assert task["result"]["isError"] is True and "session_log" in task["result"]["content"][0]["text"]
    assert gateway.requests == [] and RoutingEntry.objects.count() == 0
    assert SkillRun.objects.get().status == SkillRun.Status.ERROR


def test_a_routed_task_cancelled_while_its_model_thinks_ends_cancelled(gateway, project, asgi_server, skill_worker):
    seed_history("review", 0.95)
    gateway.on(FAST, lambda request: Reply.json(GOOD_REVIEW, delay=3))
    url = f"{asgi_server}/mcp/routing"
    handle = start(url, "review", {"project_root": str(project), "paths": ["app.py"]})
    deadline = time.monotonic() + 30
    while not gateway.requests:
        assert time.monotonic() < deadline, "the model was never asked"
        time.sleep(0.05)

    cancelled = post(
        url, "tasks/cancel", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"], headers=AUTH
    )

    assert cancelled.status_code == 200, cancelled.text
    assert finished(url, handle["taskId"])["status"] == "cancelled"
    deadline = time.monotonic() + 30
    while not (run := SkillRun.objects.get(task_id=handle["taskId"])).is_finished:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    # The model's answer was on its way (an HTTP call is not interrupted): the run keeps its verdict, and the
    # task reads cancelled, as the blocking call the client cancelled would have answered.
    assert run.cancel_requested is True
    assert finished(url, handle["taskId"])["status"] == "cancelled"


def test_a_routed_task_run_by_the_worker_is_billed_to_the_person_whose_token_started_it(
    gateway, project, asgi_server, skill_worker
):
    """Work derived from a request runs as the person who caused it: the worker, not the web request, makes the
    model call, and both the run and its model call name the person whose token started the task."""
    rosa = make_person("rosa", "operator")
    out = io.StringIO()
    call_command("token", "create", "rosa", "--scope", "routing:run", stdout=out)
    headers = {"Authorization": f"Bearer {out.getvalue().strip().splitlines()[-1]}"}
    seed_history("review", 0.95)
    gateway.on(FAST, lambda request: Reply.json(GOOD_REVIEW, delay=0.3))
    url = f"{asgi_server}/mcp/routing"
    arguments = {"project_root": str(project), "paths": ["app.py"], "session_id": "s-rosa-task"}

    response = post(
        url,
        "tools/call",
        {"name": "review", "arguments": arguments},
        capabilities=TASKS,
        name="review",
        headers=headers,
    )
    handle = response.json()["result"]
    assert handle["resultType"] == "task", handle
    deadline = time.monotonic() + 60
    while True:
        got = post(
            url, "tasks/get", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"], headers=headers
        )
        task = got.json()["result"]
        if task["status"] != "working":
            break
        assert time.monotonic() < deadline, task
        time.sleep(0.1)

    assert task["status"] == "completed" and task["result"]["isError"] is False, task
    run = SkillRun.objects.get(task_id=handle["taskId"])
    assert run.requested_by == rosa
    [call] = run.model_calls.all()
    assert call.requested_by == rosa
    assert {entry.requested_by for entry in RoutingEntry.objects.filter(session_id="s-rosa-task")} == {rosa}
