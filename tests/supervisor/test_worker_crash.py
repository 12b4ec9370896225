"""`kill -9` of the django-q2 worker process during a TDD run, through a real qcluster.

Before run ownership, the `claude` process tree was reparented to init and
went on running, the run stayed `running` forever, the advisory-lock slot was
freed under a live worker and the MCP caller blocked for the whole run
budget. Now the waiting caller notices the dead owner within
OWNER_CHECK_EVERY seconds: the claude process group is killed, the run ends
`error`, the caller gets that result and the slot is free.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest

from supervisor import executor
from supervisor.models import SkillRun
from tests.conftest import mcp_post, rpc
from tests.fakes.helpers import start_qcluster as start_cluster
from tests.fakes.helpers import tool_answer, wait_for
from tests.supervisor.conftest import process_alive, stop_process_group

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def start_qcluster(settings, allowed_root, **extra: str) -> subprocess.Popen:
    return start_cluster(
        settings,
        allowed_root,
        SUPERVISOR_TIMEOUT="120",
        SUPERVISOR_IDLE_TIMEOUT="120",
        SUPERVISOR_MAX_WORKERS="1",
        **extra,
    )


def stop_qcluster(process: subprocess.Popen) -> None:
    stop_process_group(process)


@pytest.fixture
def qcluster(fake_claude, allowed_root, settings):
    process = start_qcluster(settings, allowed_root)
    yield process
    stop_qcluster(process)


def call_in_background(url: str, name: str, arguments: dict) -> tuple[threading.Thread, dict]:
    """tools/call in a thread; the JSON-RPC answer lands in box["answer"] (SSE or JSON)."""
    box: dict = {}

    def call() -> None:
        started = time.monotonic()
        response = mcp_post(url, rpc("tools/call", {"name": name, "arguments": arguments}), timeout=300)
        box["seconds"] = time.monotonic() - started
        box["answer"] = tool_answer(response)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, box


def kill_worker_mid_run(fake_claude, qcluster: subprocess.Popen) -> tuple[SkillRun, list[int]]:
    """Wait until the fake claude runs with its children, then kill -9 the qcluster worker that owns the run."""
    pids = wait_for(lambda: len(fake_claude.pids()) == 3 and fake_claude.pids(), 90, "the fake claude to start")
    run = SkillRun.objects.running().get()
    cluster = {p.pid for p in psutil.Process(qcluster.pid).children(recursive=True)}
    assert run.worker_pid in cluster  # the owner is the django-q2 worker process, a child of the cluster
    assert run.worker_pgid == pids[0] and run.worker_slot == 1
    os.kill(run.worker_pid, signal.SIGKILL)
    return run, pids


def test_killing_the_worker_process_kills_claude_ends_the_run_and_returns_to_the_caller(
    asgi_server, qcluster, fake_claude, python_project, settings
):
    settings.SUPERVISOR_MCP_TOKEN = ""
    settings.SUPERVISOR_MAX_WORKERS = 1
    settings.SUPERVISOR_QUEUE_WAIT = 1
    fake_claude.script([{"hang": True, "children": 2}])  # a claude that sleeps with two children, printing nothing
    thread, box = call_in_background(
        f"{asgi_server}/mcp/supervisor", "tdd_red", {"project_root": str(python_project), "spec": "add(a, b)"}
    )
    run, pids = kill_worker_mid_run(fake_claude, qcluster)
    killed_at = time.monotonic()

    thread.join(timeout=60)
    returned_after = time.monotonic() - killed_at

    assert not thread.is_alive(), "the caller is still blocked"
    result = box["answer"]["result"]
    structured = result["structuredContent"]
    assert structured["status"] == "error" and structured["run_id"] == run.pk, json.dumps(result)[:2000]
    assert "abandoned" in structured["message"] and "died" in structured["message"]
    assert wait_for(lambda: not [pid for pid in pids if process_alive(pid)], 10, "the claude group to die") is True
    run.refresh_from_db()
    assert run.status == "error" and run.worker_slot is None and run.worker_pgid is None
    with executor.worker_slot() as slot:  # the only slot (SUPERVISOR_MAX_WORKERS=1) is free again
        assert slot == 1
    print(f"caller returned {returned_after:.1f} s after kill -9 of the worker (owner check every 2 s)")
