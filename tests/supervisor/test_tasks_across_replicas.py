"""tdd_red as an MCP task, started on one replica and read or cancelled on another.

Replica A is the server in the test process (uvicorn, with the skill worker
thread of tests/supervisor/conftest.py running the real executor, the fake
claude and pytest). Replica B is a separate `manage.py serve --no-worker`
process on the same test database: it shares nothing with A but the
database, as two web replicas behind a load balancer do.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

from supervisor.models import SkillRun
from tests.conftest import free_port, test_database_url
from tests.mcp.test_tasks import TASKS, post
from tests.supervisor.conftest import process_alive, stop_process_group
from tests.supervisor.test_tdd_skills import FAILING_TEST, report

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def replica_b(django_db_setup, tmp_path_factory):
    # One for the module: B keeps nothing of its own between tests (every run and task it reads is in the test
    # database, emptied after each test), and a start of `serve` costs seconds.
    env = dict(os.environ)
    for name in ("BRAIN_MCP_TOKEN", "SUPERVISOR_MCP_TOKEN", "ROUTING_MCP_TOKEN", "HYPERGUILD_ALLOW_NO_AUTH"):
        env.pop(name, None)
    env.update(DATABASE_URL=test_database_url(), BRAIN_EMBEDDER="off")
    port = free_port()
    log = tmp_path_factory.mktemp("replica-b") / "replica-b.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--no-worker", "--web-workers", "1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, log.read_text()[-3000:]
        try:
            httpx.get(f"{url}/health", timeout=2)  # 503 here (no worker beats), but it answers
            break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.3)
    yield f"{url}/mcp/supervisor", process
    stop_process_group(process)


@pytest.fixture
def replica_a(asgi_server, settings):
    settings.SUPERVISOR_MCP_TOKEN = ""  # replica B runs with no token either
    return f"{asgi_server}/mcp/supervisor"


def live_group_members(pgid: int) -> list[int]:
    """Processes of the group that still run (zombies left for an init that does not reap them do not run)."""
    members = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def start_task(url: str, project: Path) -> dict:
    arguments = {"project_root": str(project), "spec": "add(a, b) returns the sum"}
    response = post(url, "tools/call", {"name": "tdd_red", "arguments": arguments}, capabilities=TASKS, name="tdd_red")
    assert response.status_code == 200, response.text
    handle = response.json()["result"]
    assert handle["resultType"] == "task" and handle["status"] == "working"
    return handle


def get(url: str, task_id: str) -> dict:
    response = post(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS, name=task_id)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_a_tdd_red_task_started_on_a_is_polled_to_completion_on_b(
    replica_a, replica_b, fake_claude, python_project, skill_worker
):
    url_b, process_b = replica_b
    fake_claude.script([{"write": {"tests/test_add.py": FAILING_TEST}, "report": report()}])
    handle = start_task(replica_a, python_project)

    deadline = time.monotonic() + 120
    seen = set()
    while True:
        task = get(url_b, handle["taskId"])
        seen.add(task["status"])
        # One job model (issue 49): replica A (this process) runs no thread for the task; the worker runs the run.
        assert not [thread.name for thread in threading.enumerate() if thread.name.startswith("mcp-task-")]
        if task["status"] != "working" or time.monotonic() > deadline:
            break
        time.sleep(0.3)

    assert task["status"] == "completed", task
    result = task["result"]
    assert result["resultType"] == "complete" and result["isError"] is False
    assert result["structuredContent"]["verified"] is True and result["structuredContent"]["status"] == "pass"
    run = SkillRun.objects.get(pk=result["structuredContent"]["run_id"])
    # The task's result is the run's, plus what its worker's model calls cost (issue 39).
    structured = dict(result["structuredContent"])
    assert structured.pop("usage")["calls"] == run.model_calls.count() == 1
    assert run.status == "pass" and run.result == structured
    assert seen >= {"working", "completed"}
    assert run.task_id == handle["taskId"]  # the run is the task: no second record tracks it
    assert process_b.poll() is None


def test_a_tdd_red_task_cancelled_from_b_loses_its_worker_group_within_5_seconds(
    replica_a, replica_b, fake_claude, python_project, skill_worker
):
    url_b, _ = replica_b
    fake_claude.script([{"hang": True, "children": 2}])
    handle = start_task(replica_a, python_project)
    deadline = time.monotonic() + 60
    while len(fake_claude.pids()) < 3:
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.1)
    pids = fake_claude.pids()
    assert all(process_alive(pid) for pid in pids)

    response = post(url_b, "tasks/cancel", {"taskId": handle["taskId"]}, capabilities=TASKS, name=handle["taskId"])
    assert response.status_code == 200 and response.json()["result"]["resultType"] == "complete"
    cancelled_at = time.monotonic()
    while [pid for pid in pids if process_alive(pid)]:
        assert time.monotonic() - cancelled_at < 5, f"still alive: {[p for p in pids if process_alive(p)]}"
        time.sleep(0.05)
    print(f"worker group gone {time.monotonic() - cancelled_at:.2f} s after tasks/cancel on replica B")
    assert not live_group_members(pids[0])  # the worker's whole process group, not just the pids it wrote down

    deadline = time.monotonic() + 30
    while (task := get(url_b, handle["taskId"]))["status"] == "working" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert task["status"] == "cancelled"
    run = SkillRun.objects.get()
    assert run.cancel_requested is True and run.status == "cancelled"


def test_a_skill_task_the_blocking_call_would_refuse_is_answered_at_once_and_records_nothing(replica_a, allowed_root):
    call = {"name": "tdd_red", "arguments": {"project_root": "/etc", "spec": "add(a, b) returns the sum"}}
    blocking = post(replica_a, "tools/call", call, name="tdd_red").json()["result"]
    assert blocking["isError"] is True
    response = post(replica_a, "tools/call", call, capabilities=TASKS, name="tdd_red")
    assert response.status_code == 200, response.text
    answer = response.json()["result"]
    assert answer["resultType"] == "complete" and "taskId" not in answer
    assert answer["content"] == blocking["content"] and answer["isError"] is True  # the same words on the wire
    assert not SkillRun.objects.exists()


def test_a_skill_task_whose_worker_process_died_is_ended_by_the_reaper_when_read(replica_a):
    from hyperguild.mcp.mcp_tasks import new_task_id, owner_digest
    from supervisor import reaper
    from supervisor.actions import do_claim_skill_run, do_create_skill_run

    gone = subprocess.Popen(["true"])
    gone.wait()
    task_id = new_task_id()
    run = do_create_skill_run(skill="spec", arguments={"text": "x"}, task_id=task_id, task_owner=owner_digest(""))
    # What a worker killed mid-run leaves: a running run owned by a pid that no longer lives.
    do_claim_skill_run(run.pk, host=reaper.HOST, pid=gone.pid)
    task = get(replica_a, task_id)
    assert task["status"] == "completed", task
    answer = task["result"]["structuredContent"]
    assert answer["status"] == "error" and "abandoned" in answer["message"] and answer["run_id"] == run.pk
    assert SkillRun.objects.get(pk=run.pk).status == "error"
